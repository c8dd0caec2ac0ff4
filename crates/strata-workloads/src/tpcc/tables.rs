//! TPC-C's nine tables (spec 1.3), their secondary indexes, and the
//! parallel loader (spec 4.3.3): the schema side of `tpcc`, whose module
//! doc says which indexes exist and why.

use super::*;

/// The nine tables and their secondary indexes.
pub struct Tables {
    pub warehouse: Table,
    pub district: Table,
    pub customer: Table,
    pub history: Table,
    pub new_order: Table,
    pub orders: Table,
    pub order_line: Table,
    pub item: Table,
    pub stock: Table,
    /// How names are looked up (`TpccConfig::by_name`).
    pub names: Names,
    /// Only when the mix runs OrderStatus (see the module doc).
    pub orders_by_customer: Option<Index>,
}

pub(super) fn schema(name: &str, cols: &[(&str, Type)], pk: &[&str]) -> Schema {
    cols.iter()
        .fold(Schema::new(name), |s, (c, t)| s.column(*c, *t))
        .primary_key(pk)
}

/// The Stock table (spec 1.3.1): key (s_w_id, s_i_id), 17 columns. Also
/// the table of ERMIA's read-mostly microbenchmark (`crate::read_mostly`).
pub fn stock_schema() -> Schema {
    use Type::{Int as I, Text as T};
    let mut cols: Vec<(String, Type)> = vec![
        ("s_w_id".into(), I),
        ("s_i_id".into(), I),
        ("s_quantity".into(), I),
    ];
    cols.extend((1..=10).map(|i| (format!("s_dist_{i:02}"), T)));
    cols.extend([
        ("s_ytd".into(), I),
        ("s_order_cnt".into(), I),
        ("s_remote_cnt".into(), I),
        ("s_data".into(), T),
    ]);
    let cols: Vec<(&str, Type)> = cols.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    schema("stock", &cols, &["s_w_id", "s_i_id"])
}

/// Creates the Stock table alone in `db` and loads `warehouses` x `items`
/// rows as [`Tpcc::load`] does (same rows, same job size, `threads`
/// loaders), for workloads that need TPC-C's Stock table and nothing else
/// (ERMIA's microbenchmark, `crate::read_mostly`).
pub fn load_stock(
    db: &Database,
    warehouses: u32,
    items: u32,
    threads: usize,
    seed: u64,
    observer: &mut dyn Observer,
) -> Result<Table, WorkloadError> {
    let stock = db.create_table(stock_schema())?;
    let pools = Pools::new(seed);
    let items = items as i64;
    let jobs: Vec<Job> = (1..=warehouses as i64)
        .flat_map(|w| (1..=items).step_by(1000).map(move |lo| (w, lo)))
        .map(|(w, lo)| Job::Stock(w, lo, (lo + 1000).min(items + 1)))
        .collect();
    run_load_jobs(db, &jobs, threads, seed, observer, |txn, job, rng| {
        let Job::Stock(w, lo, hi) = *job else {
            return Ok(());
        };
        insert_stock(txn, &stock, &pools, w, lo, hi, rng)
    })?;
    Ok(stock)
}

/// Inserts the stock rows of warehouse `w`, items `lo..hi` (4.3.3.1).
pub(super) fn insert_stock(
    txn: &mut Transaction,
    stock: &Table,
    p: &Pools,
    w: i64,
    lo: i64,
    hi: i64,
    rng: &mut Rng,
) -> Result<(), Error> {
    for i in lo..hi {
        let mut row = Vec::with_capacity(17);
        row.extend([int(w), int(i), int(rng.range(10, 100) as i64)]);
        row.extend((0..10).map(|_| p.dist.pick(rng)));
        row.extend([int(0), int(0), int(0), p.item_data(rng)]);
        txn.insert(stock, row)?;
    }
    Ok(())
}

/// Runs load `jobs` on `threads` threads taking them from a queue, each job
/// one transaction (`Database::run`) with its own seeded generator.
pub(super) fn run_load_jobs<J: Sync>(
    db: &Database,
    jobs: &[J],
    threads: usize,
    seed: u64,
    observer: &mut dyn Observer,
    load: impl Fn(&mut Transaction, &J, &mut Rng) -> Result<(), Error> + Sync,
) -> Result<(), WorkloadError> {
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    observer.start("load", jobs.len() as u64, "jobs");
    let r = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.clamp(1, jobs.len().max(1)))
            .map(|_| {
                let (next, done, load) = (&next, &done, &load);
                s.spawn(move || -> Result<(), WorkloadError> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(job) = jobs.get(i) else {
                            return Ok(());
                        };
                        let mut rng = Rng::new(seed ^ (i as u64 + 1) << 20);
                        db.run(|txn| load(txn, job, &mut rng))?;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        crate::driver::join_loaders(workers, &done, observer)
    });
    observer.finish();
    r
}

impl Tables {
    pub(super) fn create(db: &Database, cfg: &TpccConfig) -> Result<Tables, Error> {
        use Type::{Int as I, Text as T};
        let appended = if cfg.appended_hash {
            PointLookups::Hash
        } else {
            PointLookups::Tree
        };
        let warehouse = db.create_table(schema(
            "warehouse",
            &[
                ("w_id", I),
                ("w_name", T),
                ("w_street_1", T),
                ("w_street_2", T),
                ("w_city", T),
                ("w_state", T),
                ("w_zip", T),
                ("w_tax", I),
                ("w_ytd", I),
            ],
            &["w_id"],
        ))?;
        let district = db.create_table(schema(
            "district",
            &[
                ("d_w_id", I),
                ("d_id", I),
                ("d_name", T),
                ("d_street_1", T),
                ("d_street_2", T),
                ("d_city", T),
                ("d_state", T),
                ("d_zip", T),
                ("d_tax", I),
                ("d_ytd", I),
                ("d_next_o_id", I),
            ],
            &["d_w_id", "d_id"],
        ))?;
        let customer = db.create_table(schema(
            "customer",
            &[
                ("c_w_id", I),
                ("c_d_id", I),
                ("c_id", I),
                ("c_first", T),
                ("c_middle", T),
                ("c_last", T),
                ("c_street_1", T),
                ("c_street_2", T),
                ("c_city", T),
                ("c_state", T),
                ("c_zip", T),
                ("c_phone", T),
                ("c_since", I),
                ("c_credit", T),
                ("c_credit_lim", I),
                ("c_discount", I),
                ("c_balance", I),
                ("c_ytd_payment", I),
                ("c_payment_cnt", I),
                ("c_delivery_cnt", I),
                ("c_data", T),
            ],
            &["c_w_id", "c_d_id", "c_id"],
        ))?;
        let history = db.create_table(
            schema(
                "history",
                &[
                    ("h_id", I),
                    ("h_c_id", I),
                    ("h_c_d_id", I),
                    ("h_c_w_id", I),
                    ("h_d_id", I),
                    ("h_w_id", I),
                    ("h_date", I),
                    ("h_amount", I),
                    ("h_data", T),
                ],
                &["h_id"],
            )
            .point_lookups(appended),
        )?;
        let new_order = db.create_table(
            schema(
                "new_order",
                &[("no_w_id", I), ("no_d_id", I), ("no_o_id", I)],
                &["no_w_id", "no_d_id", "no_o_id"],
            )
            .point_lookups(appended),
        )?;
        let orders = db.create_table(
            schema(
                "orders",
                &[
                    ("o_w_id", I),
                    ("o_d_id", I),
                    ("o_id", I),
                    ("o_c_id", I),
                    ("o_entry_d", I),
                    ("o_carrier_id", I),
                    ("o_ol_cnt", I),
                    ("o_all_local", I),
                ],
                &["o_w_id", "o_d_id", "o_id"],
            )
            .point_lookups(appended),
        )?;
        let order_line = db.create_table(
            schema(
                "order_line",
                &[
                    ("ol_w_id", I),
                    ("ol_d_id", I),
                    ("ol_o_id", I),
                    ("ol_number", I),
                    ("ol_i_id", I),
                    ("ol_supply_w_id", I),
                    ("ol_delivery_d", I),
                    ("ol_quantity", I),
                    ("ol_amount", I),
                    ("ol_dist_info", T),
                ],
                &["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"],
            )
            .point_lookups(appended),
        )?;
        let item = db.create_table(schema(
            "item",
            &[
                ("i_id", I),
                ("i_im_id", I),
                ("i_name", T),
                ("i_price", I),
                ("i_data", T),
            ],
            &["i_id"],
        ))?;
        let stock = db.create_table(stock_schema())?;
        let names = match cfg.by_name {
            ByName::Index => Names::Index(db.create_index_as(
                "customer_by_last",
                &customer,
                &["c_w_id", "c_d_id", "c_last", "c_first"],
                Unique::No,
                cfg.index_kind,
            )?),
            ByName::List => Names::List(db.create_table(schema(
                "customer_name",
                &[
                    ("cn_w_id", I),
                    ("cn_d_id", I),
                    ("cn_last", T),
                    ("cn_c_ids", Type::Bytes),
                ],
                &["cn_w_id", "cn_d_id", "cn_last"],
            ))?),
        };
        let orders_by_customer = if cfg.has_order_status() {
            Some(db.create_index_as(
                "orders_by_customer",
                &orders,
                &["o_w_id", "o_d_id", "o_c_id", "o_id"],
                Unique::Yes,
                cfg.index_kind,
            )?)
        } else {
            None
        };
        Ok(Tables {
            warehouse,
            district,
            customer,
            history,
            new_order,
            orders,
            order_line,
            item,
            stock,
            names,
            orders_by_customer,
        })
    }
}
