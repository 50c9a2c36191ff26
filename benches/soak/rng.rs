//! A small seeded generator (SplitMix64): the same seed gives the same fault schedule and the same sequence of
//! changes, so a run can be repeated. Not for cryptography; no crate needed for this much.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A whole number in 0..n (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 => 0,
            n => (self.next_u64() % n as u64) as usize,
        }
    }

    /// A number in [lo, hi).
    pub fn between(&mut self, lo: f64, hi: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * unit
    }

    /// An independent generator for another purpose (faults, churn), so one consumer's draws do not shift
    /// the other's.
    pub fn split(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}
