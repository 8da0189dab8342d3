//! The table of metrics: every key the records carry, with its words, its quantity (which sets
//! its unit and scale) and which direction is better.
//!
//! Why a file of its own: it is data, edited when a lab adds a measure, and read apart from the
//! lookups and formatting that use it.

use super::Better::{Higher, Lower, Neither};
use super::Quantity::*;
use super::{Better, Metric, Quantity};
use std::borrow::Cow;

/// Every metric the book's records carry (and what a lab figure may ask for by name: `time`,
/// `tflops`, `gbps`, and the `loss` and `val_loss` series). A test keeps this in step with `kernels/results/*.json`.
pub const METRICS: &[Metric] = &[
    m("time", "중앙값 시간", Millis, Lower),
    m("median_ms", "중앙값 시간", Millis, Lower),
    m("tflops", "연산 처리량", Unit("TFLOP/s"), Higher),
    m("gbps", "메모리 처리량", Unit("GB/s"), Higher),
    m("achieved_tflops", "달성 연산 처리량", Unit("TFLOP/s"), Higher),
    m("mfu_pct", "MFU (peak 대비 연산 비율)", Percent, Higher),
    m("tokens_per_s", "token 처리량", Unit("token/s"), Higher),
    m("ttft_p50_ms", "TTFT p50 (첫 token까지)", Millis, Lower),
    m("ttft_p99_ms", "TTFT p99 (첫 token까지)", Millis, Lower),
    m("tpot_p50_ms", "TPOT p50 (출력 token 간격)", Millis, Lower),
    m("tpot_p99_ms", "TPOT p99 (출력 token 간격)", Millis, Lower),
    m("step_ms", "step 시간", Millis, Lower),
    m("loss", "학습 loss", Plain, Lower),
    m("val_loss", "validation loss", Plain, Lower),
    m("ar_token_ms", "AR decoding token당 시간", Millis, Lower),
    m(
        "breakeven_steps",
        "AR과 같은 시간이 드는 step 수",
        Count("steps"),
        Neither,
    ),
    m("tokens", "token 수", Count("tokens"), Neither),
    m("kernel_time_us", "GPU kernel 시간 합", Micros, Lower),
    m(
        "launch_overhead_us",
        "CUDA graph로 줄인 launch 시간",
        Micros,
        Neither,
    ),
    m("peak_mem_bytes", "최대 GPU 메모리", Bytes, Lower),
    m("kv_reserved_peak_bytes", "KV cache 예약량 (최대)", Bytes, Lower),
    m("kv_used_peak_bytes", "KV cache 사용량 (최대)", Bytes, Neither),
    m("kv_used_pct", "KV cache 사용률", Percent, Higher),
    m(
        "kv_logical_pct",
        "KV cache 논리 사용률 (100% 초과 = 공유)",
        Percent,
        Higher,
    ),
    m("prefix_hit_pct", "prefix cache 적중률", Percent, Higher),
    m("output_tokens", "출력 token 수", Count("tokens"), Neither),
    m("kv_budget_tokens", "KV pool 크기", Count("tokens"), Neither),
    m("gpu_idle_pct", "GPU가 쉬는 시간 비율 (step당)", Percent, Lower),
    m("decode_step_ms", "decode step 시간 (batch 256)", Millis, Lower),
    m(
        "floor_ms",
        "weight + KV를 한 번 읽는 시간 (하한)",
        Millis,
        Neither,
    ),
    m("floor_ratio", "decode step ÷ 하한", Ratio, Lower),
    m("kv_read_bytes", "step당 읽는 KV 크기", Bytes, Neither),
    m("request_rate", "요청 도착률", Unit("req/s"), Neither),
    m("saturation_rate", "포화 요청률", Unit("req/s"), Neither),
    m("param_bytes_full", "전체 parameter 크기", Bytes, Neither),
    m("param_bytes_per_rank", "rank당 parameter 크기", Bytes, Lower),
    m("params_count", "parameter 수", Count(""), Neither),
    m("grad_bytes", "gradient 크기", Bytes, Neither),
    m("collective_bytes", "collective 결과 크기", Bytes, Neither),
    m("collective_calls", "collective 호출 수", Count("calls"), Neither),
    m(
        "collective_events",
        "collective event 수",
        Count("events"),
        Neither,
    ),
    m("collectives", "collective 연산 수", Count(""), Neither),
    m("compile_over_run", "compile 시간 ÷ 실행 시간", Ratio, Neither),
    m("final_loss", "최종 validation loss", Plain, Lower),
    m("final_train_loss", "최종 학습 loss", Plain, Lower),
    m("loss_bound", "검증 기준 loss 상한", Plain, Neither),
    m("unigram_entropy", "unigram entropy (loss 기준점)", Plain, Neither),
    m("err_vs_bf16", "BF16 weight 대비 상대 오차", Error, Lower),
    m("kv_err_vs_bf16", "BF16 KV cache 대비 상대 오차", Error, Lower),
    m("splits", "KV 분할 수 (split)", Count(""), Neither),
    // Collectives (dist_collectives): nccl-tests' bandwidths and the α–β fit per collective.
    m(
        "algbw_gbps",
        "algorithm bandwidth (메시지 크기 ÷ 시간)",
        Unit("GB/s"),
        Higher,
    ),
    m(
        "busbw_gbps",
        "bus bandwidth (nccl-tests 환산, link 속도와 비교)",
        Unit("GB/s"),
        Higher,
    ),
    m("alpha_us", "α (고정 지연, 최소제곱 fit)", Micros, Lower),
    m(
        "beta_ps_per_byte",
        "β (byte당 시간, 최소제곱 fit)",
        Unit("ps/B"),
        Lower,
    ),
    m("fit_gbps", "1/β (fit으로 본 대역폭)", Unit("GB/s"), Higher),
    m("fit_rms_rel_pct", "fit 상대 오차 (RMS)", Percent, Lower),
    m("fit_points", "fit에 쓴 크기 수", Count("sizes"), Neither),
    // Columns of the tables labs record (profilers, collectives).
    m("calls", "호출 수", Count(""), Neither),
    m("calls_per_run", "실행당 호출 수", Count(""), Neither),
    m("count", "개수", Count(""), Neither),
    m("cuda_time_us", "GPU 시간", Micros, Neither),
    m("cpu_time_us", "CPU 시간", Micros, Neither),
    m("time_us_per_run", "실행당 GPU 시간", Micros, Neither),
    m("cpu_ms_total", "CPU 시간 합", Millis, Neither),
    m("device_ms_total", "GPU 시간 합", Millis, Neither),
    m("pct", "시간 비율", Percent, Neither),
    m("result_bytes", "결과 크기", Bytes, Neither),
    m(
        "stream_k_tiles",
        "Stream-K로 나눈 tile 수",
        Count("tiles"),
        Neither,
    ),
];

const fn m(key: &'static str, label: &'static str, quantity: Quantity, better: Better) -> Metric {
    Metric {
        key,
        label: Cow::Borrowed(label),
        quantity,
        better,
    }
}
