//! Seeded, exactly uniform resamples for the bootstrap: the generator, the index draw, and a
//! fast path for the mean.
//!
//! The bootstrap spends nearly all of its time here (2,000 resamples × 49 cases = 98,000
//! indices for one interval of seed 002), so this is the one place the crate optimises.
//!
//! # Generator
//! xoshiro256++ (Blackman & Vigna 2021, "Scrambled linear pseudorandom number generators",
//! ACM TOMS 47(4); reference code `xoshiro256plusplus.c`), its state filled from the seed by
//! four SplitMix64 outputs (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number
//! generators", OOPSLA), as its authors recommend. It is written out here, not taken from
//! `rand`, so that the stream is fixed by the published algorithm (rand's `SmallRng` may change
//! between versions); the unit tests pin it to the reference outputs. It replaced ChaCha8
//! (about 2.2 ns per 64-bit word against about 1.2 ns here, and a third of the time of the
//! mean's bootstrap once the rest was fast); a resampling stream needs statistical quality,
//! not unpredictability.
//!
//! # Index draw
//! Lemire's multiply-and-reject draw (Lemire 2019, "Fast random integer generation in an
//! interval", ACM TOMACS 29(1)) on each 32-bit half of a word, for the range `p = nᵏ` and
//! decoded digit by digit as in Brackett-Rozinsky & Lemire (2024), "Batched ranged random
//! integer generation". For a uniform 32-bit half a, multiply repeatedly by n, keeping the high
//! part as a digit and continuing with the low 32 bits:
//!
//! ```text
//! a·n = d₁·2³² + l₁,   l₁·n = d₂·2³² + l₂,   …   ⇒   a·nᵏ = Z·2³² + lₖ,  Z = d₁nᵏ⁻¹ + … + dₖ
//! ```
//!
//! so (d₁, …, dₖ) are the base-n digits of `Z = ⌊a·p / 2³²⌋`, Lemire's draw in [0, p).
//! Rejecting the halves whose final `lₖ` is below `2³² mod p` leaves exactly ⌊2³² / p⌋ values
//! of a for every Z, so Z is exactly uniform and its digits are independent uniform indices.
//! k is the largest power with `nᵏ ≤ 2²⁸` (rejection rate below 1/16 per half; 0.0044% for
//! 49 cases), capped at 4, and 1 for n > 2²⁸ (up to 2³² cases, where a half's rejection
//! rate approaches 1/2). A word is accepted when both halves are; otherwise it is dropped
//! whole.
//!
//! # Resample layout (the stream contract)
//! Resample r takes the next ⌈n / 2k⌉ accepted words. Word j fills positions `2kj .. 2kj + 2k`:
//! the low half's k digits in order, then the high half's. Digits past position n − 1 in the
//! last word are dropped, so every resample starts on a fresh word. For n ≤ 128 (k = 4) a word
//! fills exactly one row of numpy's eight pairwise-sum accumulators, which is what lets
//! [`MeanSampler`] add each drawn case into its accumulator without writing the resample out,
//! and still give the resample's `numpy.mean` bit for bit.

/// Largest batch range for one 32-bit half: nᵏ ≤ 2²⁸ bounds the rejection rate by 2⁻⁴.
const MAX_HALF_RANGE: u64 = 1 << 28;
/// Digits per 32-bit half at most; 4 makes a word one row of numpy's 8 accumulators.
const MAX_HALF_DIGITS: u32 = 4;
/// Unrolling width of numpy's pairwise summation (`describe::pairwise_sum`).
const LANES: usize = 8;
/// numpy sums up to 128 values in one block of 8 accumulators; larger inputs are split.
const MAX_FUSED_CASES: usize = 128;

/// The xoshiro256++ generator (64-bit outputs, period 2²⁵⁶ − 1).
#[derive(Debug, Clone)]
pub(crate) struct Xoshiro256PlusPlus {
    state: [u64; 4],
}

impl Xoshiro256PlusPlus {
    /// The state is four consecutive SplitMix64 outputs from `seed`. SplitMix64's output
    /// function is a bijection of distinct counter values, so the state is never all zero.
    pub(crate) fn seed_from_u64(seed: u64) -> Self {
        let mut splitmix = SplitMix64 { state: seed };
        Xoshiro256PlusPlus { state: [splitmix.next_u64(), splitmix.next_u64(), splitmix.next_u64(), splitmix.next_u64()] }
    }

    /// `next()` of the reference `xoshiro256plusplus.c`.
    #[inline(always)]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let [s0, s1, s2, s3] = &mut self.state;
        let result = s0.wrapping_add(*s3).rotate_left(23).wrapping_add(*s0);
        let t = *s1 << 17;
        *s2 ^= *s0;
        *s3 ^= *s1;
        *s1 ^= *s2;
        *s0 ^= *s3;
        *s2 ^= t;
        *s3 = s3.rotate_left(45);
        result
    }
}

/// SplitMix64 (`splitmix64.c`), used only to expand a seed into xoshiro's state.
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A seeded source of resamples: each resample is n independent uniform indices in `[0, n)`,
/// laid out as the module documentation describes.
#[derive(Clone)]
pub(crate) struct IndexSampler {
    rng: Xoshiro256PlusPlus,
    /// Number of cases, n (1 ≤ n < 2³²).
    n: u64,
    /// Digits per 32-bit half, k (1 to 4).
    half_digits: u32,
    /// `2³² mod nᵏ`: a half whose final low part is below this is rejected.
    reject_below: u32,
}

impl IndexSampler {
    /// A sampler for indices in `[0, n)` seeded with `seed`; `None` when `n` is 0 or ≥ 2³².
    pub(crate) fn new(n: usize, seed: u64) -> Option<Self> {
        let n = u64::from(u32::try_from(n).ok().filter(|&n| n > 0)?);
        let (mut half_digits, mut range) = (1, n);
        while half_digits < MAX_HALF_DIGITS && range * n <= MAX_HALF_RANGE {
            range *= n;
            half_digits += 1;
        }
        // range = nᵏ < 2³² (≤ 2²⁸, or n itself when k = 1), so the remainder fits in u32.
        let reject_below = u32::try_from((1u64 << 32) % range).ok()?;
        Some(IndexSampler { rng: Xoshiro256PlusPlus::seed_from_u64(seed), n, half_digits, reject_below })
    }

    /// Fills `out` with one resample (`out.len()` is normally n) of `map(index)`, in position
    /// order. Mapping while drawing (e.g. `|i| cases[i]`) saves the bootstrap an index buffer.
    pub(crate) fn fill_resample_with<T>(&mut self, out: &mut [T], map: impl FnMut(usize) -> T) {
        match self.half_digits {
            4 => self.fill_rows::<4, T>(out, map),
            3 => self.fill_rows::<3, T>(out, map),
            2 => self.fill_rows::<2, T>(out, map),
            _ => self.fill_rows::<1, T>(out, map),
        }
    }

    /// [`Self::fill_resample_with`] for k = `K`: one accepted word per 2k positions.
    #[inline]
    fn fill_rows<const K: usize, T>(&mut self, out: &mut [T], mut map: impl FnMut(usize) -> T) {
        // A local copy keeps the generator's state in registers (see `MeanSampler::next_mean`).
        let mut sampler = self.clone();
        let mut rows = out.chunks_exact_mut(2 * K);
        for row in &mut rows {
            let (low, high) = sampler.word_digits::<K>(sampler.n);
            let (first, second) = row.split_at_mut(K);
            for ((slot_low, slot_high), (&d_low, &d_high)) in first.iter_mut().zip(second).zip(low.iter().zip(&high)) {
                *slot_low = map(d_low as usize);
                *slot_high = map(d_high as usize);
            }
        }
        let last = rows.into_remainder();
        if !last.is_empty() {
            let (low, high) = sampler.word_digits::<K>(sampler.n);
            for (slot, &digit) in last.iter_mut().zip(low.iter().chain(&high)) {
                *slot = map(digit as usize);
            }
        }
        *self = sampler;
    }

    /// The k digits of each half of the next accepted word: (low half's, high half's).
    /// `n` is the sampler's n, passed in so that a caller that knows a bound on it (see
    /// [`MeanSampler`]) lets the compiler see the same bound on the digits.
    #[inline(always)]
    fn word_digits<const K: usize>(&mut self, n: u64) -> ([u32; K], [u32; K]) {
        debug_assert_eq!(n, self.n);
        loop {
            let word = self.rng.next_u64();
            // The two halves are independent multiplication chains, which the processor
            // overlaps; each digit waits only on the previous product of its own half.
            let (mut low, mut high) = (word as u32, (word >> 32) as u32);
            let (mut digits_low, mut digits_high) = ([0; K], [0; K]);
            for (d_low, d_high) in digits_low.iter_mut().zip(digits_high.iter_mut()) {
                let product_low = u64::from(low) * n;
                let product_high = u64::from(high) * n;
                // The high part is below n < 2³², so the casts are exact.
                *d_low = (product_low >> 32) as u32;
                *d_high = (product_high >> 32) as u32;
                low = product_low as u32; // the low 32 bits, by design
                high = product_high as u32;
            }
            if low.min(high) >= self.reject_below {
                return (digits_low, digits_high);
            }
        }
    }
}

/// Resample means of up to 128 cases, drawn from an [`IndexSampler`] stream without writing
/// the resamples out: each drawn case goes straight into its accumulator of numpy's pairwise
/// sum, so every mean equals `numpy.mean` of the resample [`IndexSampler`] would give.
pub(crate) struct MeanSampler {
    sampler: IndexSampler,
    /// The cases, padded with zeros to 256 entries: an index that fits in a `u8` needs no
    /// bounds check.
    cases: [f64; 256],
    /// Number of cases, n (1 to 128); a `u8` so that digits are visibly below 256.
    n: u8,
}

impl MeanSampler {
    /// A sampler of resample means of `cases`, with the stream of `IndexSampler::new(n, seed)`;
    /// `None` unless 1 ≤ n ≤ 128.
    pub(crate) fn new(cases: &[f64], seed: u64) -> Option<Self> {
        if cases.len() > MAX_FUSED_CASES {
            return None;
        }
        let sampler = IndexSampler::new(cases.len(), seed)?;
        debug_assert_eq!(sampler.half_digits, MAX_HALF_DIGITS);
        let mut padded = [0.0; 256];
        padded[..cases.len()].copy_from_slice(cases);
        Some(MeanSampler { sampler, cases: padded, n: u8::try_from(cases.len()).ok()? })
    }

    /// The mean of the next resample: `(0 + s) / n` with s summed in numpy's order (see
    /// `describe::pairwise_sum`): positions `8r + j` of full rows into accumulator j, the
    /// accumulators combined as `((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))`, then the
    /// remaining positions added one by one. Starting the accumulators at +0 rather than at
    /// the first row (or at −0 for n < 8, as numpy does) only changes the sign of a zero sum,
    /// and `0 + s` makes that +0 either way.
    #[inline]
    pub(crate) fn next_mean(&mut self) -> f64 {
        let n = usize::from(self.n);
        // digit < n ≤ 128, and the compiler sees digit < 256 (a 32-bit value times a u8,
        // shifted right by 32), so indexing the 256-entry table needs no bounds check.
        let case = |digit: u32| self.cases[digit as usize];
        // A local copy keeps the generator's state in registers across the loop (through
        // `self` the compiler stores it back after every word).
        let mut sampler = self.sampler.clone();
        let mut lanes = [0.0; LANES];
        for _ in 0..n / LANES {
            let (low, high) = sampler.word_digits::<4>(u64::from(self.n));
            let (lanes_low, lanes_high) = lanes.split_at_mut(4);
            for (lane, &digit) in lanes_low.iter_mut().zip(&low) {
                *lane += case(digit);
            }
            for (lane, &digit) in lanes_high.iter_mut().zip(&high) {
                *lane += case(digit);
            }
        }
        let [a0, a1, a2, a3, a4, a5, a6, a7] = lanes;
        let mut sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
        let remainder = n % LANES;
        if remainder > 0 {
            let (low, high) = sampler.word_digits::<4>(u64::from(self.n));
            for &digit in low.iter().chain(&high).take(remainder) {
                sum += case(digit);
            }
        }
        self.sampler = sampler;
        (0.0 + sum) / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::mean_or_nan;

    /// Pearson's chi-square statistic of index counts against the uniform expectation.
    fn chi_square(n: usize, resamples: usize, seed: u64) -> f64 {
        let mut sampler = IndexSampler::new(n, seed).unwrap();
        let mut counts = vec![0usize; n];
        let mut indices = vec![0; n];
        for _ in 0..resamples {
            sampler.fill_resample_with(&mut indices, |i| i);
            for &i in &indices {
                counts[i] += 1;
            }
        }
        let expected = resamples as f64;
        counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum()
    }

    #[test]
    fn xoshiro_and_splitmix_match_their_reference_outputs() {
        // xoshiro256plusplus.c from the state {1, 2, 3, 4} (the vector rand_xoshiro checks).
        let mut rng = Xoshiro256PlusPlus { state: [1, 2, 3, 4] };
        let expected: [u64; 10] = [
            41943041,
            58720359,
            3588806011781223,
            3591011842654386,
            9228616714210784205,
            9973669472204895162,
            14011001112246962877,
            12406186145184390807,
            15849039046786891736,
            10450023813501588000,
        ];
        assert_eq!(expected.map(|_| rng.next_u64()), expected);
        // splitmix64.c with seed 1234567.
        let mut splitmix = SplitMix64 { state: 1234567 };
        let expected: [u64; 5] = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821];
        assert_eq!(expected.map(|_| splitmix.next_u64()), expected);
        // Seeding takes the first four SplitMix64 outputs as the state.
        assert_eq!(Xoshiro256PlusPlus::seed_from_u64(1234567).state, expected[..4]);
    }

    #[test]
    fn the_stream_of_seed_12345_is_pinned() {
        // The first resample of 49 cases with seed 12345 (seed 002's settings). Changing the
        // generator, the draw or the layout changes these, and with them every interval.
        let mut sampler = IndexSampler::new(49, 12345).unwrap();
        let mut indices = [0; 49];
        sampler.fill_resample_with(&mut indices, |i| i);
        assert_eq!(indices, PINNED_RESAMPLE_49);
        // Fewer digits per half for more cases (k = 2 for 1,000, k = 1 for 100,000), from the
        // same script (`resample_stream.py 1000 7`, and the second resample's start).
        let mut sampler = IndexSampler::new(1000, 7).unwrap();
        let mut indices = vec![0; 1000];
        sampler.fill_resample_with(&mut indices, |i| i);
        assert_eq!(indices[..12], [166, 726, 55, 360, 977, 762, 172, 115, 690, 740, 717, 576]);
        sampler.fill_resample_with(&mut indices, |i| i);
        assert_eq!(indices[..6], [625, 657, 1, 198, 808, 155]);
        let mut sampler = IndexSampler::new(100_000, 7).unwrap();
        let mut indices = vec![0; 100_000];
        sampler.fill_resample_with(&mut indices, |i| i);
        assert_eq!(indices[..6], [16672, 5536, 97776, 17211, 69074, 71757]);
    }

    /// First resample of `IndexSampler::new(49, 12345)`, as computed independently from the
    /// module documentation by `scripts/stats-reference/resample_stream.py` (Python integers;
    /// Z's base-n digits by division rather than the multiplication chain).
    const PINNED_RESAMPLE_49: [usize; 49] = [
        42, 33, 11, 5, 27, 4, 42, 25, 23, 11, 30, 22, 10, 2, 4, 40, 44, 9, 9, 20, 4, 8, 18, 32, 37, 6, 47, 9, 8, 29, 21, 45, 29, 42, 11,
        41, 13, 0, 36, 8, 21, 42, 3, 23, 35, 27, 9, 11, 11,
    ];

    #[test]
    fn digits_are_the_base_n_expansion_of_lemires_draw() {
        // The identity behind the method: the chained digits of a 32-bit half a equal the
        // base-n digits of Z = floor(a * n^k / 2^32), and the final low part equals
        // a * n^k mod 2^32.
        for (n, k) in [(49u64, 4u32), (200, 3), (5000, 2), (100_000, 1), (2, 4)] {
            let range = n.pow(k);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(n);
            for _ in 0..1000 {
                let a = rng.next_u64() as u32;
                let (mut low, mut digits) = (a, Vec::new());
                for _ in 0..k {
                    let product = u64::from(low) * n;
                    digits.push(product >> 32);
                    low = product as u32;
                }
                let full = u64::from(a) * range;
                let mut z = full >> 32;
                let mut expected = vec![0; k as usize];
                for slot in expected.iter_mut().rev() {
                    *slot = z % n;
                    z /= n;
                }
                assert_eq!(digits, expected, "n = {n}");
                assert_eq!(low, full as u32, "n = {n}");
            }
            let sampler = IndexSampler::new(n as usize, 0).unwrap();
            assert_eq!((sampler.half_digits, sampler.reject_below), (k, ((1u64 << 32) % range) as u32), "n = {n}");
        }
    }

    #[test]
    fn draws_are_uniform_for_small_and_large_case_counts() {
        // 99.9% points of chi-square: 84.0 for 48 degrees of freedom, 1105.9 for 999,
        // 10.83 for 1 (two cases, eight digits per word).
        let forty_nine = chi_square(49, 10_000, 12345);
        assert!(forty_nine < 84.0, "chi-square {forty_nine}");
        let thousand = chi_square(1000, 1000, 7);
        assert!(thousand < 1105.9, "chi-square {thousand}");
        let two = chi_square(2, 100_000, 3);
        assert!(two < 10.83, "chi-square {two}");
    }

    #[test]
    fn the_uniformity_check_can_fail() {
        // Plain `byte % 49` favours 11 of the 49 indices by 6/5; on 490,000 draws its
        // chi-square is in the thousands, far above the 84.0 used above.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(12345);
        let mut counts = [0usize; 49];
        for _ in 0..490_000 / 8 {
            for byte in rng.next_u64().to_le_bytes() {
                counts[usize::from(byte) % 49] += 1;
            }
        }
        let expected = (490_000 / 8 * 8) as f64 / 49.0;
        let statistic: f64 = counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum();
        assert!(statistic > 1000.0, "chi-square {statistic}");
    }

    #[test]
    fn resamples_start_on_a_fresh_word() {
        // 49 cases: six full words and one digit of a seventh per resample; the second
        // resample begins with the eighth accepted word, so it equals a 56-slot fill's tail
        // only if the seven unused digits are dropped.
        let mut sampler = IndexSampler::new(49, 5).unwrap();
        let (mut first, mut second) = ([0; 49], [0; 49]);
        sampler.fill_resample_with(&mut first, |i| i);
        sampler.fill_resample_with(&mut second, |i| i);
        let mut whole = IndexSampler::new(49, 5).unwrap();
        let mut both = [0; 112];
        whole.fill_resample_with(&mut both, |i| i);
        assert_eq!(first[..], both[..49]);
        assert_eq!(second[..], both[56..105]);
    }

    #[test]
    fn edges_and_determinism() {
        assert!(IndexSampler::new(0, 1).is_none());
        assert!(IndexSampler::new(1 << 32, 1).is_none());
        assert!(IndexSampler::new((1 << 32) - 1, 1).is_some());
        let mut one = IndexSampler::new(1, 1).unwrap();
        let mut indices = [9; 50];
        one.fill_resample_with(&mut indices, |i| i);
        assert_eq!(indices, [0; 50]);
        let draw = |seed| {
            let mut sampler = IndexSampler::new(49, seed).unwrap();
            let mut indices = vec![0; 49];
            sampler.fill_resample_with(&mut indices, |i| i);
            indices
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }

    #[test]
    fn fused_means_equal_numpy_means_of_the_drawn_resamples() {
        // Every n from 1 to 128 (remainders 0 to 7, one to sixteen rows), with values whose
        // sums round, so a different summation order would show.
        for n in 1..=MAX_FUSED_CASES {
            let cases: Vec<f64> = (0..n).map(|i| 0.1 + (i as f64).sqrt() * 1e3).collect();
            let mut fused = MeanSampler::new(&cases, n as u64).unwrap();
            let mut sampler = IndexSampler::new(n, n as u64).unwrap();
            let mut resample = vec![0.0; n];
            for _ in 0..20 {
                sampler.fill_resample_with(&mut resample, |i| cases[i]);
                assert_eq!(fused.next_mean(), mean_or_nan(&resample), "n = {n}");
            }
        }
        assert!(MeanSampler::new(&[0.0; 129], 1).is_none());
        assert!(MeanSampler::new(&[], 1).is_none());
    }
}
