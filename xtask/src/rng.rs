//! A tiny seeded random number generator (SplitMix64) for the tree generator.
//!
//! Determinism is the whole point: the same seed must give the same tree on every run of
//! the same binary, so the generator draws every random choice, in a fixed order, from one
//! `Rng` on one thread. The floating-point helpers (`ln`, `exp`, `sqrt`, `cos`, `powf`)
//! give the same results for one binary on one machine; another libm could differ in the
//! last bit and so, rarely, in a rounded size.

/// SplitMix64: one 64-bit state word, full period, good enough statistics for shaping a tree.
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Mix the seed once so that small seeds (0, 1, 2) do not start in similar states.
        let mut rng = Rng { state: seed ^ 0x6A09_E667_F3BC_C908 };
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n` > 0), by multiply-shift: no modulo bias worth noting.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index into a slice of length `len` (> 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, probability: f64) -> bool {
        self.unit() < probability
    }

    /// A log-uniform integer in `[low, high)`: each doubling of size is equally likely.
    pub fn log_uniform(&mut self, low: u64, high: u64) -> u64 {
        let (ln_low, ln_high) = ((low as f64).ln(), (high as f64).ln());
        let value = (ln_low + self.unit() * (ln_high - ln_low)).exp() as u64;
        value.clamp(low, high - 1)
    }

    /// A standard normal sample (Box–Muller), used for log-normal directory weights.
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // in (0, 1], so ln is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An index in `0..len` skewed towards 0: `len * u^power`. Used to make a few parents
    /// popular, as real trees have a few directories with many children.
    pub fn skewed_index(&mut self, len: usize, power: f64) -> usize {
        let index = (self.unit().powf(power) * len as f64) as usize;
        index.min(len - 1)
    }
}
