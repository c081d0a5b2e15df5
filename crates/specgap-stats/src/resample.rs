//! Unbiased, seeded draws of case indices for the bootstrap.
//!
//! The bootstrap spends most of its time drawing indices (2,000 resamples × 49 cases = 98,000
//! draws for one interval of seed 002), so the draw is the one place this crate optimises.
//! rand's `Uniform<u32>` spends 32 random bits and one multiplication per index; here one
//! 64-bit word yields k indices at once, still exactly uniform.
//!
//! The method is Lemire's multiply-and-reject draw (Lemire 2019, "Fast random integer
//! generation in an interval", ACM TOMACS 29(1)), applied to the range `p = nᵏ` and decoded
//! digit by digit, as in Brackett-Rozinsky & Lemire (2024), "Batched ranged random integer
//! generation". For a uniform 64-bit word w, multiply repeatedly by n, keeping the high word
//! as a digit and continuing with the low word:
//!
//! ```text
//! w·n = d₁·2⁶⁴ + l₁,   l₁·n = d₂·2⁶⁴ + l₂,   …   ⇒   w·nᵏ = Z·2⁶⁴ + lₖ,  Z = d₁nᵏ⁻¹ + … + dₖ
//! ```
//!
//! so (d₁, …, dₖ) are the base-n digits of `Z = ⌊w·p / 2⁶⁴⌋`, which is Lemire's draw in
//! [0, p). Rejecting the words whose final `lₖ` is below `2⁶⁴ mod p` leaves exactly
//! ⌊2⁶⁴ / p⌋ words for every Z, so Z is exactly uniform and its digits are independent uniform
//! indices. k is the largest power with `nᵏ ≤ 2⁶⁰`, which keeps the rejection rate below 1/16
//! (0.4% for 49 cases).

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest batch range: nᵏ ≤ 2⁶⁰ bounds the rejection probability (2⁶⁴ mod p)/2⁶⁴ by 2⁻⁴.
const MAX_BATCH_RANGE: u128 = 1 << 60;
/// Cap on digits per word (reached only for n ≤ 3).
const MAX_BATCH_DIGITS: usize = 32;

/// A seeded source of uniform indices in `[0, n)`.
pub(crate) struct IndexSampler {
    words: DigitWords,
    /// Digits of the last word not yet handed out (a resample rarely needs a multiple of k).
    spare: [usize; MAX_BATCH_DIGITS],
    spare_next: usize,
    spare_len: usize,
}

/// The accepted 64-bit words and their k base-n digits.
struct DigitWords {
    rng: ChaCha8Rng,
    n: u64,
    /// Digits per word, k.
    digits: usize,
    /// `2⁶⁴ mod nᵏ`: words whose final low part is below this are rejected.
    reject_below: u64,
}

impl IndexSampler {
    /// A sampler for indices in `[0, n)` seeded with `seed`; `None` when `n` is 0 or ≥ 2³².
    pub(crate) fn new(n: usize, seed: u64) -> Option<Self> {
        let n = u32::try_from(n).ok().filter(|&n| n > 0)?;
        let n = u64::from(n);
        let (mut digits, mut range) = (0, 1u128);
        while digits < MAX_BATCH_DIGITS && range * u128::from(n) <= MAX_BATCH_RANGE {
            range *= u128::from(n);
            digits += 1;
        }
        // n < 2³² ≤ 2⁶⁰, so at least one digit fits and range fits in u64.
        let range = u64::try_from(range).ok()?;
        Some(IndexSampler {
            words: DigitWords {
                rng: ChaCha8Rng::seed_from_u64(seed),
                n,
                digits,
                reject_below: range.wrapping_neg() % range,
            },
            spare: [0; MAX_BATCH_DIGITS],
            spare_next: 0,
            spare_len: 0,
        })
    }

    /// Fills `indices` with independent uniform draws, continuing the stream in order.
    pub(crate) fn fill(&mut self, indices: &mut [usize]) {
        self.fill_with(indices, |index| index);
    }

    /// Fills `out` with `map(index)` for independent uniform draws of `index`, continuing the
    /// stream in order. Mapping while drawing (e.g. `|i| cases[i]`) saves the bootstrap a
    /// pass over an index buffer. `map` must be pure: a rejected word's digits are mapped and
    /// then overwritten.
    pub(crate) fn fill_with<T: Copy>(&mut self, out: &mut [T], mut map: impl FnMut(usize) -> T) {
        let mut filled = self.take_spare(out, &mut map);
        let k = self.words.digits;
        while out.len() - filled >= 2 * k {
            self.words
                .draw_pair(&mut out[filled..filled + 2 * k], &mut map);
            filled += 2 * k;
        }
        while out.len() - filled >= k {
            self.words.draw(&mut out[filled..filled + k], &mut map);
            filled += k;
        }
        if filled < out.len() {
            self.words.draw(&mut self.spare[..k], &mut |index| index);
            self.spare_next = 0;
            self.spare_len = k;
            filled += self.take_spare(&mut out[filled..], &mut map);
        }
        debug_assert_eq!(filled, out.len());
    }

    /// Moves spare digits (mapped) into the front of `out`; returns how many were moved.
    fn take_spare<T>(&mut self, out: &mut [T], map: &mut impl FnMut(usize) -> T) -> usize {
        let count = (self.spare_len - self.spare_next).min(out.len());
        let spare = &self.spare[self.spare_next..self.spare_next + count];
        for (slot, &index) in out.iter_mut().zip(spare) {
            *slot = map(index);
        }
        self.spare_next += count;
        count
    }
}

impl DigitWords {
    /// Fills `slots` (2k of them) with the mapped digits of the next two accepted words.
    ///
    /// The same result as two calls of [`Self::draw`], but the two multiplication chains
    /// are interleaved so that the processor can overlap them (each digit waits on the
    /// previous product of its own word).
    #[inline]
    fn draw_pair<T: Copy>(&mut self, slots: &mut [T], map: &mut impl FnMut(usize) -> T) {
        let (first, second) = slots.split_at_mut(self.digits);
        let (mut low_a, mut low_b) = (self.rng.next_u64(), self.rng.next_u64());
        for (slot_a, slot_b) in first.iter_mut().zip(second.iter_mut()) {
            let product_a = u128::from(low_a) * u128::from(self.n);
            let product_b = u128::from(low_b) * u128::from(self.n);
            *slot_a = map((product_a >> 64) as usize);
            *slot_b = map((product_b >> 64) as usize);
            low_a = product_a as u64;
            low_b = product_b as u64;
        }
        // Keep the stream's order: accepted words fill the slots in the order they were drawn.
        match (low_a >= self.reject_below, low_b >= self.reject_below) {
            (true, true) => {}
            (true, false) => self.draw(second, map),
            (false, true) => {
                first.copy_from_slice(second);
                self.draw(second, map);
            }
            (false, false) => {
                self.draw(first, map);
                self.draw(second, map);
            }
        }
    }

    /// Fills `slots` (k of them) with the mapped digits of one accepted word.
    #[inline]
    fn draw<T>(&mut self, slots: &mut [T], map: &mut impl FnMut(usize) -> T) {
        loop {
            let mut low = self.rng.next_u64();
            for slot in slots.iter_mut() {
                let product = u128::from(low) * u128::from(self.n);
                // The high word is < n < 2³², so the cast is exact.
                *slot = map((product >> 64) as usize);
                low = product as u64; // the low 64 bits, by design
            }
            if low >= self.reject_below {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pearson's chi-square statistic of index counts against the uniform expectation.
    fn chi_square(n: usize, draws: usize, seed: u64) -> f64 {
        let mut sampler = IndexSampler::new(n, seed).unwrap();
        let mut counts = vec![0usize; n];
        // Uneven request sizes exercise the spare digits between calls.
        let mut indices = vec![0; 37];
        for _ in 0..draws / 37 {
            sampler.fill(&mut indices);
            for &i in &indices {
                counts[i] += 1;
            }
        }
        let expected = (draws / 37 * 37) as f64 / n as f64;
        counts
            .iter()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum()
    }

    #[test]
    fn digits_are_the_base_n_expansion_of_lemires_draw() {
        // The identity behind the method: the chained digits equal the base-n digits of
        // Z = floor(w * n^k / 2^64), and the final low word equals w * n^k mod 2^64.
        let n: u64 = 49;
        let k = 10; // 49^10 <= 2^60 < 49^11
        let range = n.pow(k);
        let mut rng = ChaCha8Rng::seed_from_u64(99);
        for _ in 0..1000 {
            let w = rng.next_u64();
            let (mut low, mut digits) = (w, Vec::new());
            for _ in 0..k {
                let product = u128::from(low) * u128::from(n);
                digits.push((product >> 64) as u64);
                low = product as u64;
            }
            let full = u128::from(w) * u128::from(range);
            let mut z = (full >> 64) as u64;
            let mut expected = vec![0; k as usize];
            for slot in expected.iter_mut().rev() {
                *slot = z % n;
                z /= n;
            }
            assert_eq!(digits, expected);
            assert_eq!(low, full as u64);
        }
        let sampler = IndexSampler::new(49, 0).unwrap();
        assert_eq!(
            (sampler.words.digits, sampler.words.reject_below),
            (10, (1u128 << 64).rem_euclid(u128::from(range)) as u64)
        );
    }

    #[test]
    fn draws_are_uniform_for_small_and_large_case_counts() {
        // 99.9% points of chi-square: 84.0 for 48 degrees of freedom, 1105.9 for 999.
        let forty_nine = chi_square(49, 490_000, 12345);
        assert!(forty_nine < 84.0, "chi-square {forty_nine}");
        let thousand = chi_square(1000, 1_000_000, 7);
        assert!(thousand < 1105.9, "chi-square {thousand}");
    }

    #[test]
    fn the_uniformity_check_can_fail() {
        // Plain `byte % 49` favours 11 of the 49 indices by 6/5; on 490,000 draws its
        // chi-square is in the thousands, far above the 84.0 used above.
        let mut rng = ChaCha8Rng::seed_from_u64(12345);
        let mut bytes = vec![0u8; 490_000];
        rng.fill_bytes(&mut bytes);
        let mut counts = [0usize; 49];
        for b in bytes {
            counts[usize::from(b) % 49] += 1;
        }
        let statistic: f64 = counts
            .iter()
            .map(|&c| (c as f64 - 10_000.0).powi(2) / 10_000.0)
            .sum();
        assert!(statistic > 1000.0, "chi-square {statistic}");
    }

    #[test]
    fn edges_and_determinism() {
        assert!(IndexSampler::new(0, 1).is_none());
        assert!(IndexSampler::new(1 << 32, 1).is_none());
        let mut one = IndexSampler::new(1, 1).unwrap();
        let mut indices = [9; 50];
        one.fill(&mut indices);
        assert_eq!(indices, [0; 50]);
        let draw = |seed| {
            let mut sampler = IndexSampler::new(49, seed).unwrap();
            let mut indices = vec![0; 100];
            sampler.fill(&mut indices[..3]);
            sampler.fill(&mut indices[3..]);
            indices
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
        // Splitting a request does not change the stream.
        let mut whole = IndexSampler::new(49, 5).unwrap();
        let mut all = vec![0; 100];
        whole.fill(&mut all);
        assert_eq!(all, draw(5));
    }
}
