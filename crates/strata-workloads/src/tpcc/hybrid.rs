//! TPC-C-hybrid (ERMIA, SIGMOD 2016, §5 "TPC-C-hybrid"): TPC-C plus
//! TPC-CH's Supplier, Nation and Region tables and ERMIA's read-mostly
//! Q2* transaction, a modified TPC-CH Query 2.
//!
//! ```text
//!   region (5) ─1:n─ nation (62) ─1:n─ supplier (10,000)
//!                                          │  su_suppkey = (s_w_id * s_i_id) mod 10,000
//!                                          └─1:n─ stock (TPC-C's)
//!
//!   Q2*: pick a region r; read the nations of r; scan the first
//!        q2_size x 10,000 suppliers, keep those of r's nations; for each,
//!        read all its stock rows and take the one with the lowest
//!        s_quantity; read its item; unless i_data contains 'b', if that
//!        quantity is below 15, add 50 to it (an update)
//!   mix: NewOrder 40  Payment 38  Q2* 10  OrderStatus, Delivery, StockLevel 4 each
//! ```
//!
//! Q2* reads thousands of stock rows and writes a few: a read-mostly
//! transaction whose reads NewOrder keeps overwriting, and whose access
//! pattern follows the supplier, not the warehouse, so it crosses every
//! terminal's partition. That is what starves it under OCC (its reads fail
//! validation) and not under snapshot isolation (paper Figs. 2, 5, 12).
//!
//! One difference from ERMIA's code, which re-reads the supplier prefix once
//! per nation of the region: the prefix is scanned once, and suppliers of
//! other regions' nations are skipped; the same suppliers and stock rows are
//! processed, with 1/12 of the supplier reads.

use strata::{Database, Error, Table, Transaction, Type, Value};

use super::{col, get_int, int, k1, k2, schema, Flow, TpccConfig, TpccWorker};
use crate::rng::Rng;

/// TPC-CH's fixed sizes.
pub const SUPPLIERS: i64 = 10_000;
pub const NATIONS: i64 = 62;
pub const REGIONS: i64 = 5;
/// Q2* refills a supplier's lowest stock below this quantity...
pub const Q2_THRESHOLD: i64 = 15;
/// ... by this much.
pub const Q2_REFILL: i64 = 50;

const REGION_NAMES: [&str; REGIONS as usize] =
    ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

// Column positions.
const N_REGIONKEY: usize = 2;
const SU_NATIONKEY: usize = 2;
const I_DATA: usize = 4;

/// The three TPC-CH tables.
pub struct ChTables {
    pub region: Table,
    pub nation: Table,
    pub supplier: Table,
}

/// TPC-CH's tables and, per supplier, its stock rows (w, i): those with
/// (w * i) mod 10,000 = su_suppkey, computed once at load as ERMIA does.
pub struct Ch {
    pub t: ChTables,
    supplier_stock: Vec<Vec<(u32, u32)>>,
}

impl Ch {
    /// Creates and loads the three tables in `db`.
    pub(super) fn load(db: &Database, cfg: &TpccConfig) -> Result<Ch, Error> {
        use Type::{Int as I, Text as T};
        let region = db.create_table(schema(
            "region",
            &[("r_regionkey", I), ("r_name", T), ("r_comment", T)],
            &["r_regionkey"],
        ))?;
        let nation = db.create_table(schema(
            "nation",
            &[
                ("n_nationkey", I),
                ("n_name", T),
                ("n_regionkey", I),
                ("n_comment", T),
            ],
            &["n_nationkey"],
        ))?;
        let supplier = db.create_table(schema(
            "supplier",
            &[
                ("su_suppkey", I),
                ("su_name", T),
                ("su_nationkey", I),
                ("su_address", T),
                ("su_phone", T),
                ("su_acctbal", I),
                ("su_comment", T),
            ],
            &["su_suppkey"],
        ))?;
        let mut rng = Rng::new(cfg.seed ^ 0xC4);
        db.run(|x| {
            for (r, name) in REGION_NAMES.iter().enumerate() {
                x.insert(&region, vec![int(r as i64), Value::from(*name), "".into()])?;
            }
            for n in 0..NATIONS {
                x.insert(
                    &nation,
                    vec![
                        int(n),
                        Value::from(format!("NATION-{n:02}")),
                        int(n % REGIONS),
                        "".into(),
                    ],
                )?;
            }
            Ok(())
        })?;
        for lo in (0..SUPPLIERS).step_by(1_000) {
            db.run(|x| {
                for s in lo..lo + 1_000 {
                    x.insert(
                        &supplier,
                        vec![
                            int(s),
                            Value::from(format!("Supplier#{s:09}")),
                            int(rng.range(0, NATIONS as u64 - 1) as i64),
                            Value::from(format!("address {s}")),
                            Value::from(format!("{:015}", rng.range(0, 999_999_999))),
                            int(rng.range(0, 1_000_000) as i64 - 99_999),
                            "".into(),
                        ],
                    )?;
                }
                Ok(())
            })?;
        }
        let mut supplier_stock = vec![Vec::new(); SUPPLIERS as usize];
        for w in 1..=cfg.warehouses {
            for i in 1..=cfg.items {
                let s = (u64::from(w) * u64::from(i)) % SUPPLIERS as u64;
                supplier_stock[s as usize].push((w, i));
            }
        }
        Ok(Ch {
            t: ChTables {
                region,
                nation,
                supplier,
            },
            supplier_stock,
        })
    }

    /// The stock rows (w, i) of supplier `s`.
    pub fn stock_of(&self, s: usize) -> &[(u32, u32)] {
        &self.supplier_stock[s]
    }
}

/// Q2* for `region` (see the module doc).
pub(super) fn q2_star(
    w: &mut TpccWorker,
    txn: &mut Transaction,
    region: i64,
) -> Result<Flow, Error> {
    let tpcc = w.tpcc;
    let ch = tpcc
        .ch
        .as_ref()
        .expect("a mix with Q2* loads the TPC-CH tables");
    let t = &tpcc.t;
    txn.read_with(&ch.t.region, &k1(region), |_| ())?;
    let mut in_region = [false; NATIONS as usize];
    txn.scan_with(&ch.t.nation, .., |r| {
        if get_int(r, N_REGIONKEY) == region {
            in_region[get_int(r, 0) as usize] = true;
        }
    })?;
    let scanned = (tpcc.cfg.q2_size * SUPPLIERS as f64).ceil() as i64;
    let mut suppliers = Vec::new();
    txn.scan_with(&ch.t.supplier, k1(0)..k1(scanned), |r| {
        if in_region[get_int(r, SU_NATIONKEY) as usize] {
            suppliers.push(get_int(r, 0) as usize);
        }
    })?;
    for s in suppliers {
        // The supplier's stock row with the lowest quantity.
        let mut lowest: Option<(i64, i64, i64)> = None;
        for &(sw, si) in &ch.supplier_stock[s] {
            let (sw, si) = (i64::from(sw), i64::from(si));
            let q = txn
                .read_with(&t.stock, &k2(sw, si), |r| get_int(r, col::S_QUANTITY))?
                .unwrap_or(i64::MAX);
            if lowest.is_none_or(|(_, _, low)| q < low) {
                lowest = Some((sw, si, q));
            }
        }
        let Some((sw, si, q)) = lowest else { continue };
        let has_b = txn
            .read_with(&t.item, &k1(si), |r| {
                r[I_DATA].as_text().is_some_and(|d| d.contains('b'))
            })?
            .unwrap_or(true);
        if !has_b && q < Q2_THRESHOLD {
            txn.update(
                &t.stock,
                &k2(sw, si),
                &[(col::S_QUANTITY, int(q + Q2_REFILL))],
            )?;
        }
    }
    Ok(Flow::Commit)
}

#[cfg(test)]
mod tests {
    use super::super::{Tpcc, TpccWorker};
    use super::*;
    use crate::Quiet;
    use std::collections::BTreeMap;

    /// Q2* refills exactly the lowest stock row of each scanned supplier of
    /// the region, and only when it is below the threshold and its item's
    /// data has no 'b': every other row keeps its quantity.
    #[test]
    fn q2_star_refills_only_the_lowest_stock_below_the_threshold() {
        let cfg = TpccConfig {
            q2_size: 0.3,
            threads: 1,
            ..TpccConfig::small(2).hybrid()
        };
        let tpcc =
            Tpcc::load(Database::open(Default::default()).unwrap(), cfg, &mut Quiet).unwrap();
        let (t, ch) = (&tpcc.t, tpcc.ch.as_ref().unwrap());
        // Quantities: 40 everywhere, 12 and 13 on some rows (below the
        // threshold), so that a supplier's lowest row is well defined.
        let mut rng = Rng::new(7);
        let mut before = BTreeMap::new();
        tpcc.db
            .run(|x| {
                for w in 1..=2i64 {
                    for i in 1..=tpcc.cfg.items as i64 {
                        let q = match rng.range(0, 9) {
                            0 => 12,
                            1 => 13,
                            _ => 40,
                        };
                        x.update(&t.stock, &k2(w, i), &[(col::S_QUANTITY, int(q))])?;
                        before.insert((w, i), q);
                    }
                }
                Ok(())
            })
            .unwrap();
        let region = 2;
        let mut w = TpccWorker::new(&tpcc, 0, false);
        tpcc.db
            .run(|x| q2_star(&mut w, x, region).map(|_| ()))
            .unwrap();
        // What Q2* should have done, computed from the tables directly.
        let mut x = tpcc.db.begin_read_only().unwrap();
        let mut want = before.clone();
        let nations: Vec<i64> = (0..NATIONS).filter(|n| n % REGIONS == region).collect();
        let mut expected_refills = 0;
        for s in 0..(0.3 * SUPPLIERS as f64).ceil() as i64 {
            let nation = x
                .read_with(&ch.t.supplier, &k1(s), |r| get_int(r, SU_NATIONKEY))
                .unwrap()
                .unwrap();
            if !nations.contains(&nation) {
                continue;
            }
            let lowest = ch
                .stock_of(s as usize)
                .iter()
                .map(|&(w, i)| (before[&(i64::from(w), i64::from(i))], w, i))
                .min_by_key(|&(q, _, _)| q);
            let Some((q, sw, si)) = lowest else { continue };
            // The first lowest in the supplier's order wins a tie.
            let first = ch
                .stock_of(s as usize)
                .iter()
                .find(|&&(w, i)| before[&(i64::from(w), i64::from(i))] == q)
                .unwrap();
            assert_eq!((first.0, first.1), (sw, si));
            let b = x
                .read_with(&t.item, &k1(i64::from(si)), |r| {
                    r[I_DATA].as_text().unwrap().contains('b')
                })
                .unwrap()
                .unwrap();
            if !b && q < Q2_THRESHOLD {
                want.insert((i64::from(sw), i64::from(si)), q + Q2_REFILL);
                expected_refills += 1;
            }
        }
        assert!(expected_refills > 5, "the test exercises refills");
        let mut changed = 0;
        for (&(sw, si), &q) in &want {
            let now = x
                .read_with(&t.stock, &k2(sw, si), |r| get_int(r, col::S_QUANTITY))
                .unwrap()
                .unwrap();
            assert_eq!(now, q, "stock ({sw}, {si}) was {}", before[&(sw, si)]);
            changed += usize::from(now != before[&(sw, si)]);
        }
        assert_eq!(changed, expected_refills);
    }

    /// Every stock row belongs to exactly the supplier (w * i) mod 10,000.
    #[test]
    fn each_stock_row_has_one_supplier() {
        let cfg = TpccConfig::small(3).hybrid();
        let db = Database::open(Default::default()).unwrap();
        let ch = Ch::load(&db, &cfg).unwrap();
        let rows: usize = (0..SUPPLIERS as usize).map(|s| ch.stock_of(s).len()).sum();
        assert_eq!(rows, 3 * cfg.items as usize);
        for s in [0usize, 1, 999, 9_999] {
            for &(w, i) in ch.stock_of(s) {
                assert_eq!((w as usize * i as usize) % SUPPLIERS as usize, s);
            }
        }
    }
}
