//! Random numbers for the workloads: a tiny per-thread generator and
//! YCSB's Zipfian key chooser.
//!
//! ```text
//!   rank:      0    1    2    3   ...            n-1
//!   P(rank) ∝ 1/1^θ 1/2^θ 1/3^θ 1/4^θ ...       1/n^θ      (θ = 0: uniform)
//!              ███  ██▌  ██   █▋                  ▏
//! ```
//!
//! The Zipfian generator is Gray et al.'s (SIGMOD 1994) as used by YCSB:
//! O(n) set-up to compute zeta(n), then O(1) per draw. Rank 0 is the hottest
//! key. It is exact for the two hottest ranks and approximate (within a few
//! percent) elsewhere, which is what every YCSB implementation measures with.

/// SplitMix64: tiny, fast and good enough for choosing keys.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// An independent stream for thread `i` of a run seeded with `seed`.
    pub fn for_thread(seed: u64, i: usize) -> Self {
        Rng::new(seed.wrapping_mul(0x1000_0000_01b3).wrapping_add(i as u64))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi] (inclusive); `lo <= hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        let span = hi - lo + 1;
        if span == 0 {
            return self.next_u64();
        }
        lo + ((self.next_u64() as u128 * span as u128) >> 64) as u64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }
}

/// YCSB's Zipfian generator over ranks `0..n` (Gray et al.'s method) for
/// theta < 1; for theta = 1 (which the Peloton study uses, and where that
/// method's exponent 1 / (1 - theta) is infinite) Hörmann and Derflinger's
/// rejection-inversion sampler, exact for any exponent.
#[derive(Clone, Debug)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    /// `alpha` when it is a whole number (theta 0.5, 0.8, 0.9, 0.95...):
    /// `powi`'s few multiplications instead of `powf`, which was 6% of a
    /// YCSB run at theta 0.9 (two threads, 10 operations a transaction).
    alpha_int: Option<i32>,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
    /// Set for theta >= `REJECTION_FROM`.
    rejection: Option<RejectionInversion>,
}

/// From this skew on, `Zipfian` samples by rejection-inversion.
const REJECTION_FROM: f64 = 0.999_999;

/// Hörmann and Derflinger, "Rejection-inversion to generate variates from
/// monotone discrete distributions" (1996): invert the integral of the
/// continuous hat function h(x) = x^-s over [k - 1/2, k + 1/2] and accept
/// rank k with the probability h(k) / that integral; about one try a draw.
#[derive(Clone, Debug)]
struct RejectionInversion {
    s: f64,
    n: f64,
    h_x1: f64,
    h_n: f64,
    /// Ranks whose inversion lands this close to them are accepted at once.
    squeeze: f64,
}

impl RejectionInversion {
    fn new(n: u64, s: f64) -> Self {
        let mut r = RejectionInversion {
            s,
            n: n as f64,
            h_x1: 0.0,
            h_n: 0.0,
            squeeze: 0.0,
        };
        r.h_x1 = r.h_integral(1.5) - 1.0;
        r.h_n = r.h_integral(r.n + 0.5);
        r.squeeze = 2.0 - r.h_integral_inverse(r.h_integral(2.5) - r.h(2.0));
        r
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// The integral of h from 1 (shifted): ((x^(1-s)) - 1) / (1 - s), or
    /// ln x at s = 1, in a form exact near s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let l = x.ln();
        expm1_over_x((1.0 - self.s) * l) * l
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * x).exp()
    }

    /// A rank in 1..=n.
    fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.next_f64() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// (e^x - 1) / x, 1 at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

/// ln(1 + x) / x, 1 at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

impl Zipfian {
    /// `n >= 1` ranks, `theta` in [0, 1]; 0 is uniform. Callers validate
    /// their input first (`YcsbConfig::validate`); out-of-range values are
    /// clamped rather than panicking.
    pub fn new(n: u64, theta: f64) -> Self {
        let n = n.max(1);
        let theta = if theta.is_finite() {
            theta.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if theta >= REJECTION_FROM {
            let zetan = (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum();
            return Zipfian {
                n,
                theta,
                alpha: 0.0,
                alpha_int: None,
                zetan,
                eta: 0.0,
                half_pow_theta: 0.0,
                rejection: Some(RejectionInversion::new(n, theta)),
            };
        }
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = if theta == 0.0 { n as f64 } else { zeta(n) };
        let zeta2 = zeta(2.min(n));
        let eta = if n > 1 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        } else {
            0.0
        };
        let alpha = 1.0 / (1.0 - theta);
        // 1 / (1 - 0.9) is 10.000000000000002 in floats: close enough to
        // 10 that the two powers differ in the last bits only.
        let alpha_int = ((alpha - alpha.round()).abs() < 1e-9 && alpha <= 1024.0)
            .then_some(alpha.round() as i32);
        Zipfian {
            n,
            theta,
            alpha,
            alpha_int,
            zetan,
            eta,
            half_pow_theta: 0.5f64.powf(theta),
            rejection: None,
        }
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Probability of rank `r` (0-based) under the exact Zipf law.
    pub fn probability(&self, r: u64) -> f64 {
        1.0 / ((r + 1) as f64).powf(self.theta) / self.zetan
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if let Some(r) = &self.rejection {
            return r.sample(rng) - 1;
        }
        if self.theta == 0.0 {
            // A multiply-high, not a float's round trip: 21 instructions
            // less a key (62 -> 41; 1.3% of a 50%-update YCSB
            // transaction's count under callgrind).
            return rng.range(0, self.n - 1);
        }
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.n - 1);
        }
        let base = self.eta * u - self.eta + 1.0;
        let power = match self.alpha_int {
            Some(k) => base.powi(k),
            None => base.powf(self.alpha),
        };
        let r = (self.n as f64 * power) as u64;
        r.min(self.n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(z: &Zipfian, draws: u32, seed: u64) -> Vec<u32> {
        let mut rng = Rng::new(seed);
        let mut counts = vec![0u32; z.n() as usize];
        for _ in 0..draws {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        counts
    }

    #[test]
    fn zipfian_rank_one_matches_theory_at_theta_0_9() {
        let z = Zipfian::new(1000, 0.9);
        let draws = 200_000;
        let counts = histogram(&z, draws, 7);
        // The two hottest ranks are drawn exactly by the generator.
        for r in 0..2 {
            let expect = z.probability(r) * draws as f64;
            let got = counts[r as usize] as f64;
            assert!(
                (got - expect).abs() < 0.05 * expect,
                "rank {r}: {got} vs {expect}"
            );
        }
        // Frequencies fall with rank: the top decile holds most draws.
        let top100: u32 = counts[..100].iter().sum();
        let theory: f64 = (0..100).map(|r| z.probability(r)).sum::<f64>() * draws as f64;
        assert!(
            (top100 as f64 - theory).abs() < 0.1 * theory,
            "top 100: {top100} vs {theory}"
        );
        assert!(counts[0] > 5 * counts[50]);
    }

    /// theta = 1 (the study's highest skew) samples the exact Zipf law:
    /// every one of the ten hottest ranks, and the top 100 together, within
    /// a few percent of 1 / (r H_n); tiny domains stay in range.
    #[test]
    fn zipfian_theta_one_matches_theory() {
        let z = Zipfian::new(1000, 1.0);
        let draws = 400_000;
        let counts = histogram(&z, draws, 11);
        let harmonic: f64 = (1..=1000).map(|i| 1.0 / i as f64).sum();
        for r in 0..10u64 {
            let expect = draws as f64 / ((r + 1) as f64 * harmonic);
            let got = counts[r as usize] as f64;
            assert!(
                (got - expect).abs() < 0.05 * expect,
                "rank {r}: {got} vs {expect}"
            );
            assert!((z.probability(r) * draws as f64 - expect).abs() < 1e-6 * expect);
        }
        let top100: u32 = counts[..100].iter().sum();
        let theory: f64 = (1..=100).map(|i| 1.0 / i as f64).sum::<f64>() / harmonic;
        let share = f64::from(top100) / draws as f64;
        assert!(
            (share - theory).abs() < 0.01,
            "top 100: {share} vs {theory}"
        );
        let mut rng = Rng::new(4);
        for n in [1, 2, 3] {
            let z = Zipfian::new(n, 1.0);
            for _ in 0..1000 {
                assert!(z.sample(&mut rng) < n);
            }
        }
    }

    /// The whole-exponent shortcut (`powi`) draws the ranks `powf` draws:
    /// at most a rare neighbour where the two powers round apart.
    #[test]
    fn whole_exponents_draw_what_powf_draws() {
        for (theta, k) in [(0.5, 2), (0.8, 5), (0.9, 10), (0.95, 20)] {
            let fast = Zipfian::new(1_000_000, theta);
            assert_eq!(fast.alpha_int, Some(k), "theta {theta}");
            let exact = Zipfian {
                alpha_int: None,
                ..fast.clone()
            };
            let (mut a, mut b) = (Rng::new(3), Rng::new(3));
            let mut apart = 0;
            for _ in 0..100_000 {
                let (x, y) = (fast.sample(&mut a), exact.sample(&mut b));
                assert!(x.abs_diff(y) <= 1, "theta {theta}: {x} vs {y}");
                apart += usize::from(x != y);
            }
            assert!(apart <= 10, "theta {theta}: {apart} draws apart");
        }
        assert_eq!(Zipfian::new(1000, 0.75).alpha_int, Some(4));
        assert_eq!(Zipfian::new(1000, 0.7).alpha_int, None);
    }

    #[test]
    fn zipfian_theta_zero_is_uniform() {
        let z = Zipfian::new(10, 0.0);
        let counts = histogram(&z, 100_000, 2);
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn zipfian_theta_0_99_is_very_skewed_and_in_range() {
        let z = Zipfian::new(1000, 0.99);
        let counts = histogram(&z, 100_000, 1);
        assert_eq!(counts.iter().map(|&c| c as u64).sum::<u64>(), 100_000);
        let top10: u32 = counts[..10].iter().sum();
        assert!(top10 > 30_000, "top10 = {top10}");
        assert!(counts[0] > counts[100]);
    }

    #[test]
    fn zipfian_tiny_domains_stay_in_range() {
        let mut rng = Rng::new(3);
        for n in [1, 2, 3] {
            let z = Zipfian::new(n, 0.9);
            for _ in 0..1000 {
                assert!(z.sample(&mut rng) < n);
            }
        }
    }

    #[test]
    fn rng_range_is_inclusive_and_bounded() {
        let mut rng = Rng::new(5);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let x = rng.range(3, 7);
            assert!((3..=7).contains(&x));
            seen[(x - 3) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
