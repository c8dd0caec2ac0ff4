//! Which warehouse a TPC-C transaction runs against: the terminal's fixed
//! home (the specification's terminals), or one drawn per transaction,
//! uniformly or with 80-20 skew (ERMIA §4.4, Fig. 8: "we enforce workers to
//! pick up target partition randomly in TPC-C, following uniform and 80-20
//! random distribution, each time transactions start").
//!
//! ```text
//!  fixed     thread i ──────────────> warehouse i mod W + 1, every transaction
//!  uniform   each transaction ──────> 1..=W, each 1/W
//!  80-20     each transaction ──80%─> hot:  1..=H   (H = max(1, round(W/5)))
//!                             └─20%─> cold: H+1..=W (all hot when H = W)
//! ```
//!
//! The hot set is the first fifth of the warehouses, as in ERMIA's
//! benchmark ("80% of all accesses touch 20% of WHs ..., while the 20% of
//! accesses touch the remaining 80% of WHs"). A drawn warehouse is the
//! transaction's home for everything the specification says of a home
//! warehouse (its district, its customer, NewOrder's local supply); the
//! remote warehouse of a Payment or a remote order line is still any other
//! one. The draw comes from the terminal's generator after the type's, so
//! a transaction retried after a conflict draws the same warehouse again,
//! and `Fixed` draws nothing (its runs are those of before this setting).
//!
//! Invariant: a drawn warehouse is always in `1..=W`.

use crate::rng::Rng;
use serde::Serialize;

/// How each transaction's home warehouse is chosen
/// (`TpccConfig::warehouse_pick`, `strata bench tpcc --warehouse-pick`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarehousePick {
    /// Thread i's home is warehouse `i mod W + 1` for the whole run.
    #[default]
    Fixed,
    /// Drawn uniformly from `1..=W` each time a transaction starts
    /// (ERMIA Fig. 8, left).
    Uniform,
    /// Drawn each time a transaction starts: with probability 0.8 from the
    /// hot fifth `1..=H`, else from the other warehouses (ERMIA Fig. 8,
    /// right).
    #[serde(rename = "80-20")]
    Skew8020,
}

impl WarehousePick {
    pub const ALL: [WarehousePick; 3] = [
        WarehousePick::Fixed,
        WarehousePick::Uniform,
        WarehousePick::Skew8020,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WarehousePick::Fixed => "fixed",
            WarehousePick::Uniform => "uniform",
            WarehousePick::Skew8020 => "80-20",
        }
    }

    /// The hot warehouses of 80-20 skew among `warehouses`: `1..=hot`.
    pub fn hot(warehouses: u32) -> u32 {
        ((f64::from(warehouses) * 0.2).round() as u32).clamp(1, warehouses.max(1))
    }

    /// The home warehouse of the next transaction of a terminal whose
    /// fixed home is `fixed`.
    pub fn draw(self, rng: &mut Rng, warehouses: u32, fixed: i64) -> i64 {
        let w = u64::from(warehouses.max(1));
        match self {
            WarehousePick::Fixed => fixed,
            WarehousePick::Uniform => rng.range(1, w) as i64,
            WarehousePick::Skew8020 => {
                let hot = u64::from(Self::hot(warehouses));
                if rng.chance(0.8) || hot == w {
                    rng.range(1, hot) as i64
                } else {
                    rng.range(hot + 1, w) as i64
                }
            }
        }
    }
}

impl std::str::FromStr for WarehousePick {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("expected fixed, uniform or 80-20, got {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(p: WarehousePick, warehouses: u32, fixed: i64, n: usize) -> Vec<u64> {
        let mut rng = Rng::new(7);
        let mut c = vec![0u64; warehouses as usize + 1];
        for _ in 0..n {
            let w = p.draw(&mut rng, warehouses, fixed);
            assert!((1..=i64::from(warehouses)).contains(&w), "{p:?} drew {w}");
            c[w as usize] += 1;
        }
        c
    }

    /// Fixed keeps the terminal's home; uniform spreads evenly; 80-20 sends
    /// 80% to the hot fifth (here 2 of 10) and spreads the rest over the
    /// others. 100,000 seeded draws: each bound is more than five standard
    /// deviations wide, and the counts are the same on every run.
    #[test]
    fn each_setting_draws_home_warehouses_in_its_distribution() {
        let n = 100_000;
        let f = counts(WarehousePick::Fixed, 10, 4, n);
        assert_eq!(f[4], n as u64);

        let u = counts(WarehousePick::Uniform, 10, 4, n);
        for (w, &c) in u.iter().enumerate().skip(1) {
            // mean 10,000, sd 95
            assert!((9_500..=10_500).contains(&c), "uniform: warehouse {w}: {c}");
        }

        assert_eq!(WarehousePick::hot(10), 2);
        let s = counts(WarehousePick::Skew8020, 10, 4, n);
        let hot: u64 = s[1..=2].iter().sum();
        // mean 80,000, sd 126
        assert!((79_300..=80_700).contains(&hot), "80-20: hot {hot}");
        for (w, &c) in s.iter().enumerate().skip(1) {
            let mean = if w <= 2 { 40_000.0 } else { 2_500.0 };
            let sd: f64 = if w <= 2 { 155.0 } else { 49.0 };
            assert!(
                (c as f64 - mean).abs() < 6.0 * sd,
                "80-20: warehouse {w}: {c}, expected about {mean}"
            );
        }
    }

    #[test]
    fn the_hot_set_is_a_fifth_and_never_empty() {
        assert_eq!(WarehousePick::hot(1), 1);
        assert_eq!(WarehousePick::hot(2), 1);
        assert_eq!(WarehousePick::hot(5), 1);
        assert_eq!(WarehousePick::hot(24), 5);
        // One warehouse: 80-20 has nowhere else to go.
        let one = counts(WarehousePick::Skew8020, 1, 1, 1000);
        assert_eq!(one[1], 1000);
    }

    #[test]
    fn names_parse_back() {
        for p in WarehousePick::ALL {
            assert_eq!(p.name().parse::<WarehousePick>(), Ok(p));
        }
        assert!("zipf".parse::<WarehousePick>().is_err());
    }
}
