//! The seeded order in which a panel's models are called on one subject.
//!
//! For each (run seed, episode, subject) the seats are shuffled by a ChaCha8 generator seeded
//! with the first eight bytes (little-endian) of sha256 over `"{seed}\0{episode}\0{subject}"`,
//! as the `oracle:R` subsets are. The judge and the detector call every seat, so the order
//! only fixes the sequence of requests; the extractor stops once enough scores agree, so the
//! order decides which models extract (seed 002 §4.1 "remaining routes are skipped").

use rand::SeedableRng as _;
use rand::seq::SliceRandom as _;
use rand_chacha::ChaCha8Rng;

/// A seed derived from the run seed, an episode and a subject.
pub fn subject_seed(seed: u64, episode: &str, subject: &str) -> u64 {
    let digest = crate::sha256(format!("{seed}\0{episode}\0{subject}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The seats `0..seats` in the order they are called.
pub fn call_order(seed: u64, episode: &str, subject: &str, seats: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..seats as u32).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(subject_seed(seed, episode, subject)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_permutation_fixed_by_its_inputs() {
        let a = call_order(7, "e1", "t1", 5);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        assert_eq!(a, call_order(7, "e1", "t1", 5));
        let others: Vec<Vec<u32>> = (0..20u64).map(|s| call_order(s, "e1", "t1", 5)).collect();
        assert!(others.iter().any(|o| *o != a), "the seed changes the order");
    }
}
