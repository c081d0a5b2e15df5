#!/usr/bin/env python3
"""Independent model of specgap-stats' bootstrap resample stream (crates/specgap-stats/src/resample.rs).

Written from the module documentation with Python integers, not from the Rust code: xoshiro256++
seeded by four SplitMix64 outputs; each 64-bit word split into 32-bit halves (low first); a half
a gives the k base-n digits of Z = floor(a * n^k / 2^32) (by division here, by a multiplication
chain in Rust); a word is dropped unless both halves have a * n^k mod 2^32 >= 2^32 mod n^k;
every resample starts on a fresh word. Prints the first resample of 49 cases with seed 12345,
which `the_stream_of_seed_12345_is_pinned` checks.

Run: python3 scripts/stats-reference/resample_stream.py [n] [seed]
"""

import sys

MASK = (1 << 64) - 1


def splitmix64(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & MASK


def xoshiro256plusplus(seed):
    seeds = splitmix64(seed)
    s = [next(seeds) for _ in range(4)]
    while True:
        result = (rotl((s[0] + s[3]) & MASK, 23) + s[0]) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        yield result


def resamples(n, seed, count):
    k, p = 1, n
    while k < 4 and p * n <= 1 << 28:
        p, k = p * n, k + 1
    words = xoshiro256plusplus(seed)
    for _ in range(count):
        resample = []
        while len(resample) < n:
            word = next(words)
            halves = [word & 0xFFFFFFFF, word >> 32]
            if any((a * p) % (1 << 32) < (1 << 32) % p for a in halves):
                continue
            for a in halves:
                z = (a * p) >> 32
                digits = []
                for _ in range(k):
                    digits.append(z % n)
                    z //= n
                resample += reversed(digits)
        yield resample[:n]


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 49
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 12345
    print(next(resamples(n, seed, 1)))
