//! A map over `0..n` on every core, results in index order.
//!
//! Why not a thread-pool crate: the renderer and the validator need one call shape (independent
//! items of very different cost — a card with ten figures next to one with none), which a shared
//! counter balances: each thread takes the next item when it is free.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f(0), f(1), …, f(n - 1)`, computed on up to as many threads as the machine has cores.
/// A panic in `f` is raised again in the caller.
pub fn map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map(|c| c.get())
        .unwrap_or(1)
        .min(n);
    if threads <= 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return done;
            }
            done.push((i, f(i)));
        }
    };
    let mut all = std::thread::scope(|s| {
        let others: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in others {
            all.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        all
    });
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, v)| v).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_back_in_index_order() {
        let v = super::map(100, |i| i * i);
        assert_eq!(v, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(super::map(0, |i| i).is_empty());
    }
}
