//! CPU side of verification: random inputs, f64 references, and the error measure.
//!
//! Every variant is checked before it is timed, on fresh random inputs, against a reference
//! computed here in f64 (or, for large matrix products, against cuBLAS — itself checked against
//! f64 at a small size). The measure is ‖out − ref‖ / ‖ref‖ over all elements; a NaN anywhere
//! (the harness fills outputs with NaN before the check run) makes it infinite, so an unwritten
//! element can never pass.
//!
//! The large references run on all CPU cores with scoped threads: a 1 GiB input is 2^28 floats.
//!
//! One file per topic: `parallel` (all cores), `random` (inputs), `bf16` (bit patterns),
//! `compare` (the error measure), `rows` and `attention` (f64 references).

mod attention;
mod bf16;
mod compare;
mod parallel;
mod random;
mod rows;

pub use attention::*;
pub use bf16::*;
pub use compare::*;
pub use parallel::*;
pub use random::*;
pub use rows::*;
