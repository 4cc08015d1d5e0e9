//! Seeded random draws for the statistics' simulation tests (test builds
//! only): uniform and normal values from ChaCha8, so every simulation is
//! deterministic and a failure replays.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A seeded generator.
pub struct Rng(ChaCha8Rng);

pub fn rng(seed: u64) -> Rng {
    Rng(ChaCha8Rng::seed_from_u64(seed))
}

impl Rng {
    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        loop {
            let u: f64 = self.0.random();
            if u > 0.0 {
                return u;
            }
        }
    }

    /// A standard normal value (Box-Muller; one of the pair is dropped,
    /// simplicity over speed).
    pub fn std_normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// A normal distribution to draw samples from.
#[derive(Clone, Copy, Debug)]
pub struct Normal {
    pub mean: f64,
    pub sd: f64,
}

impl Normal {
    pub fn new(mean: f64, sd: f64) -> Normal {
        Normal { mean, sd }
    }

    pub fn one(&self, r: &mut Rng) -> f64 {
        self.mean + self.sd * r.std_normal()
    }

    pub fn draw(&self, r: &mut Rng, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.one(r)).collect()
    }
}

/// One round of two arms, the second `delta` slower: a drift both share
/// (load 1..1.4 along a sine starting at `phase`), 2% noise each, and a
/// factor `each` draws for each arm on its own.
fn round_of(
    g: &mut Rng,
    round: u32,
    phase: f64,
    delta: f64,
    each: impl Fn(&mut Rng) -> f64,
) -> (f64, f64) {
    let noise = Normal::new(0.0, 0.02);
    let load = 1.0 + 0.4 * (f64::from(round) / 5.0 + phase).sin().abs();
    let a = 100.0 * load * each(g) * noise.one(g).exp();
    let b = 100.0 * (1.0 + delta) * load * each(g) * noise.one(g).exp();
    (a, b)
}

/// One round of a busy machine in which two arms are measured, the second
/// `delta` slower: a drift both share (load 1..1.4 along a sine starting
/// at `phase`), 2% noise each, and a burst of +30..80% on each arm in 1
/// round of 10.
pub fn busy_round(g: &mut Rng, round: u32, phase: f64, delta: f64) -> (f64, f64) {
    round_of(g, round, phase, delta, |g| {
        if g.uniform() < 0.1 {
            1.3 + 0.5 * g.uniform()
        } else {
            1.0
        }
    })
}

/// The factor of a bimodal measurement (a process's memory layout, huge
/// pages or not, a frequency state): 1.12, a mode 12% slower, with chance
/// 0.3, else 1.
pub fn mode(g: &mut Rng) -> f64 {
    if g.uniform() < 0.3 { 1.12 } else { 1.0 }
}

/// One round of a machine on which each sample lands in one of two modes:
/// the drift and noise of [`busy_round`], and each arm's sample, on its
/// own, in the slow [`mode`] or not; the second arm `delta` slower.
pub fn bimodal_round(g: &mut Rng, round: u32, phase: f64, delta: f64) -> (f64, f64) {
    round_of(g, round, phase, delta, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_have_the_asked_moments() {
        let mut r = rng(1);
        let v = Normal::new(10.0, 2.0).draw(&mut r, 20_000);
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
        assert!((m - 10.0).abs() < 0.05, "{m}");
        assert!((sd - 2.0).abs() < 0.05, "{sd}");
    }
}
