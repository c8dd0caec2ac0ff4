//! `strata bench tpcc`: TPC-C on a fresh in-memory database, with per-type
//! figures and the consistency conditions checked after the run.
//!
//! ```text
//!   flags ──> TpccConfig ──> load (threads) ──> run mix (+ StockScan thread)
//!         ──> per-type committed/aborted/latency ──> check conditions 1-4
//! ```

use std::process::ExitCode;

use clap::Args;
use serde::Serialize;
use strata::{Database, Durability, LogGranularity, Options, Protocol};
use strata_workloads::driver::{DriverConfig, Stop};
use strata_workloads::huge_pages::HugePages;
use strata_workloads::tpcc::{self, TpccConfig, TpccReport};

use crate::progress::BarObserver;
use crate::{DurabilityArg, UsageError};

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct TpccArgs {
    /// Concurrency-control protocol.
    #[arg(long, default_value = "ssn", value_parser = crate::parse_protocol)]
    pub protocol: Protocol,
    /// Version storage: n2o, o2n, time-travel, delta or siro (siro needs
    /// --gc dead-zone).
    #[arg(long, default_value = "n2o", value_parser = crate::parse_storage)]
    pub storage: strata::VersionStorage,
    /// Garbage collection: txn, vac, coop (o2n only), dead-zone or none.
    #[arg(long, default_value = "txn", value_parser = crate::parse_gc)]
    pub gc: strata::GcPolicy,
    /// What secondary-index entries point at: tuple-id, pkey or physical
    /// (physical needs n2o or o2n).
    #[arg(long, default_value = "tuple-id", value_parser = crate::parse_pointers)]
    pub index_pointers: strata::IndexPointers,
    /// The structure of TPC-C's two secondary indexes (customers by last
    /// name, orders by customer): standard (a B+-tree) or mvpbt.
    #[arg(long, default_value = "standard", value_parser = crate::ycsb_core_cmd::parse_index_kind)]
    pub index: strata::IndexKind,
    /// How Payment and OrderStatus find a customer by last name: `index`
    /// (a scan of the secondary index customer_by_last in the
    /// transaction) or `list` (one read of a table of ids per name built
    /// at load, as CCBench's tpcc_silo keeps them; the customer table then
    /// has no secondary index). For like-for-like counts against
    /// tpcc_silo; `--index` then shapes orders_by_customer alone.
    #[arg(long, value_name = "HOW", default_value = "index")]
    pub by_name: tpcc::ByName,
    /// Warehouses (each ~100K stock rows and 30K customers at spec size).
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// Terminal threads; thread i's home warehouse is i mod W + 1 (see
    /// --warehouse-pick).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Which warehouse each transaction runs against: `fixed` (the
    /// thread's home, i mod W + 1), or drawn each time a transaction
    /// starts, `uniform` over all W or `80-20` (80% of transactions to the
    /// first fifth of the warehouses): ERMIA's Fig. 8.
    #[arg(long, default_value = "fixed", value_parser = parse_warehouse_pick)]
    pub warehouse_pick: tpcc::WarehousePick,
    /// Measured run time, in seconds.
    #[arg(long, default_value_t = 5.0, value_parser = crate::parse_seconds)]
    pub duration: f64,
    /// Stop once each terminal thread has run this many transactions
    /// (committed or aborted) instead of after --duration: the same work
    /// on any machine, for instruction counts (`valgrind --tool=callgrind`)
    /// that compare builds at equal run lengths.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: Option<u64>,
    /// Unmeasured warm-up time, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse_seconds)]
    pub warmup: f64,
    /// Also run the study's StockScan query on a dedicated thread.
    #[arg(long)]
    pub stock_scan: bool,
    /// Items (and stock rows per warehouse); 100000 in the specification.
    #[arg(long, default_value_t = 100_000)]
    pub items: u32,
    /// Customers (and initial orders) per district; 3000 in the specification.
    #[arg(long, default_value_t = 3_000)]
    pub customers: u32,
    /// The mix: `standard` (NewOrder 45, Payment 43, OrderStatus, Delivery,
    /// StockLevel 4 each), `np` (NewOrder and Payment, 50 each: CCBench's
    /// tpcc_silo and many papers), `hybrid` (ERMIA's TPC-C-hybrid: NewOrder
    /// 40, Payment 38, Q2* 10, 4 each of the others), or percentages in
    /// that order adding up to 100 (`50,40,0,5,5`; a sixth is Q2*'s).
    #[arg(long, default_value = "standard", value_parser = parse_mix)]
    pub mix: [u32; 6],
    /// ERMIA's TPC-C-hybrid: the same as `--mix hybrid`.
    #[arg(long, conflicts_with = "mix")]
    pub hybrid: bool,
    /// Q2*'s size: the fraction of TPC-CH's supplier table it scans (ERMIA
    /// varies it from 0.01 to 1).
    #[arg(long, default_value_t = 0.2)]
    pub q2_size: f64,
    /// SI+SSN: run the exclusion-window test at commit only, not also on
    /// every read and overwrite (to measure what the early check is worth).
    #[arg(long)]
    pub no_early_exclusion: bool,
    /// SI+SSN: first updater wins on every write, as ERMIA publishes it,
    /// instead of letting a write to a row the transaction never read land
    /// on a newer committed version (`Options::ssn_blind_writes`).
    #[arg(long)]
    pub no_blind_writes: bool,
    /// When updates and deletes go on their rows: `eager` (as they run,
    /// the papers' engines; the default) or `at-commit` (buffered and
    /// installed after the read phase, as Silo and Cicada;
    /// `Options::write_install`). Refused with mv2pl.
    #[arg(long, value_name = "WHEN", default_value_t = strata::WriteInstall::Eager)]
    pub write_install: strata::WriteInstall,
    /// How a transaction lost to a conflict waits before it runs again:
    /// `exponential` (random, below 2^attempt us; the default) or
    /// `regulated` (Cicada's contention regulation: one bound hill-climbed
    /// on the commit rate; `Options::backoff`).
    #[arg(long, value_name = "KIND", default_value_t = strata::Backoff::Exponential)]
    pub backoff: strata::Backoff,
    /// `none` (in memory), `group` (write-ahead log, commit waits for the
    /// group fsync) or `async` (log flushed in the background), as for
    /// `bench ycsb`.
    #[arg(long, value_enum, default_value_t = DurabilityArg::None)]
    pub durability: DurabilityArg,
    /// Directory of the write-ahead log (with `--durability group|async`);
    /// new or empty, or one `strata bench` made (it is emptied first).
    #[arg(long)]
    pub wal_dir: Option<std::path::PathBuf>,
    /// How writes reach the shared log buffer: `per-transaction` (one
    /// reservation at pre-commit, ERMIA's log manager) or `per-operation`
    /// (one per insert, update and delete, and one for the commit: the
    /// traditional logging of ERMIA's Fig. 10). Needs --durability.
    #[arg(long, default_value = "per-transaction", value_parser = parse_log_granularity)]
    pub log_granularity: LogGranularity,
    /// Time each transaction's work by engine component (index, version
    /// read, version install, CC at commit, log, log wait, GC, the rest)
    /// and report it per committed transaction (ERMIA's Fig. 11).
    #[arg(long)]
    pub time_breakdown: bool,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Count a transaction lost to a conflict and draw a new one, instead of
    /// running it again with the same inputs until it commits.
    #[arg(long)]
    pub no_retry: bool,
    /// NewOrder reads its items and stock rows without first handing their
    /// keys to `Transaction::prefetch` (CCBench's tpcc_silo prefetches
    /// nothing).
    #[arg(long)]
    pub no_prefetch: bool,
    /// Give the tables TPC-C appends to (history, new_order, orders,
    /// order_line) a hash side for point lookups too; by default their
    /// primary index is the ordered tree alone, as in CCBench's tpcc_silo,
    /// and an insert writes no hash entry.
    #[arg(long)]
    pub appended_hash: bool,
    /// Transparent huge pages: `load` (for the loaded data only, none for
    /// memory the run touches first, as TPC-C's growing tables do; the
    /// default on Linux), `off` (none) or `os` (the operating system's
    /// choice).
    #[arg(long, value_name = "POLICY", value_parser = crate::ycsb_args::parse_huge_pages)]
    pub huge_pages: Option<strata_workloads::huge_pages::HugePages>,
    /// Save committed transactions per second (all types), once a second,
    /// to this CSV file: how throughput holds up over a long run.
    #[arg(long, value_name = "FILE")]
    pub series: Option<std::path::PathBuf>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Count the writes to cache lines two or more threads wrote, per
    /// committed transaction and call site, over the measured window (the
    /// counting build only: `RUSTFLAGS="--cfg strata_count"`).
    #[arg(long)]
    pub shared_writes: bool,
    /// Print CSV (a header and one row per transaction type) instead.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
}

#[derive(Serialize)]
struct Summary<'a> {
    benchmark: &'static str,
    protocol: &'static str,
    storage: &'static str,
    gc: &'static str,
    index_pointers: &'static str,
    config: &'a TpccConfig,
    durability: &'static str,
    log_granularity: &'static str,
    huge_pages: HugePages,
    #[serde(skip_serializing_if = "Option::is_none")]
    shared_writes: Option<crate::shared_writes::SharedWrites>,
    #[serde(flatten)]
    report: &'a TpccReport,
}

pub fn run(a: &TpccArgs) -> Result<ExitCode, UsageError> {
    let cfg = TpccConfig {
        warehouses: a.warehouses,
        items: a.items,
        customers: a.customers,
        threads: a.threads,
        stock_scan: a.stock_scan,
        retry_aborted: !a.no_retry,
        seed: a.seed,
        mix: if a.hybrid { tpcc::HYBRID_MIX } else { a.mix },
        q2_size: a.q2_size,
        prefetch: !a.no_prefetch,
        appended_hash: a.appended_hash,
        warehouse_pick: a.warehouse_pick,
        index_kind: a.index,
        by_name: a.by_name,
    };
    cfg.validate().map_err(|e| UsageError(e.to_string()))?;
    if a.shared_writes {
        crate::shared_writes::check_enabled()?;
    }
    if !(a.duration > 0.0 && a.duration.is_finite()) {
        return Err(UsageError(format!(
            "--duration must be a positive number of seconds, got {}",
            a.duration
        )));
    }
    if !(a.warmup >= 0.0 && a.warmup.is_finite()) {
        return Err(UsageError(format!(
            "--warmup must be zero or more seconds, got {}",
            a.warmup
        )));
    }
    if let Some(path) = &a.series {
        crate::check_output_file("series", path)?;
    }
    let durability = crate::bench::durability_of(a.durability, a.wal_dir.as_ref())?;
    if a.log_granularity == LogGranularity::PerOperation && durability == Durability::None {
        return Err(UsageError(
            "--log-granularity per-operation needs --durability group|async and --wal-dir".into(),
        ));
    }
    let opts = Options::default()
        .protocol(a.protocol)
        .version_storage(a.storage)
        .gc(a.gc)
        .index_pointers(a.index_pointers)
        .ssn_early_exclusion(!a.no_early_exclusion)
        .ssn_blind_writes(!a.no_blind_writes)
        .write_install(a.write_install)
        .backoff(a.backoff)
        .durability(durability)
        .log_granularity(a.log_granularity)
        .time_breakdown(a.time_breakdown);
    opts.validate().map_err(|e| UsageError(e.to_string()))?;
    if let Durability::Wal { dir, .. } = &opts.durability {
        crate::bench::take_wal_dir(dir)?;
    }
    let db = Database::open(opts).map_err(|e| UsageError(e.to_string()))?;
    let huge_pages = a.huge_pages.unwrap_or_else(HugePages::load_where_supported);
    huge_pages
        .apply_at_start()
        .map_err(|e| UsageError(e.to_string()))?;
    let driver = DriverConfig {
        warmup: crate::seconds("warmup", a.warmup)?,
        duration: crate::seconds("duration", a.duration)?,
        series: a.series.is_some(),
        huge_pages,
        ab_interval: None,
    };
    let mut bar = BarObserver::new(a.json || a.csv);
    let mut counting = None;
    let observing: &mut dyn strata_workloads::driver::Observer = if a.shared_writes {
        counting.insert(crate::shared_writes::Counting::new(&mut bar, db.clone()))
    } else {
        &mut bar
    };
    let stop = a.transactions.map_or(Stop::Elapsed, Stop::Transactions);
    let run = tpcc::run_until(db, &cfg, &driver, &stop, observing);
    let shared_writes = counting.and_then(|c| c.result);
    let Some(r) = crate::workload_outcome(run)? else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(path) = &a.series {
        if let Err(e) = crate::bench::write_series(path, [("strata", r.run.series.as_slice())]) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return Ok(ExitCode::FAILURE);
        }
    }
    if a.json {
        let s = Summary {
            benchmark: "tpcc",
            protocol: a.protocol.name(),
            storage: a.storage.name(),
            gc: a.gc.name(),
            index_pointers: strata::matrix::pointers_name(a.index_pointers),
            config: &cfg,
            durability: match a.durability {
                DurabilityArg::None => "none",
                DurabilityArg::Group => "group",
                DurabilityArg::Async => "async",
            },
            log_granularity: a.log_granularity.name(),
            huge_pages,
            shared_writes: shared_writes.clone(),
            report: &r,
        };
        println!(
            "{}",
            serde_json::to_string(&s).expect("the summary serialises")
        );
        return Ok(ExitCode::SUCCESS);
    }
    if a.csv {
        let mut w = csv::Writer::from_writer(std::io::stdout());
        let _ = w.write_record([
            "protocol",
            "warehouses",
            "threads",
            "type",
            "committed_per_s",
            "aborted_per_s",
            "p50_us",
            "p99_us",
            "p999_us",
        ]);
        for t in &r.run.per_type {
            let _ = w.write_record([
                a.protocol.name().to_string(),
                cfg.warehouses.to_string(),
                cfg.threads.to_string(),
                t.name.to_string(),
                format!("{:.1}", t.committed_per_s),
                format!("{:.1}", t.aborted_per_s),
                format!("{:.2}", t.latency.p50_us),
                format!("{:.2}", t.latency.p99_us),
                format!("{:.2}", t.latency.p999_us),
            ]);
        }
        let _ = w.flush();
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "tpcc  protocol {}  warehouses {}  threads {}{}  mix {}  items {}  customers/district {}",
        a.protocol.name(),
        cfg.warehouses,
        cfg.threads,
        if cfg.stock_scan { " + StockScan" } else { "" },
        match cfg.mix {
            tpcc::STANDARD_MIX => "standard".to_string(),
            tpcc::NEW_ORDER_PAYMENT => "np (NewOrder + Payment)".to_string(),
            tpcc::HYBRID_MIX => format!("hybrid (Q2* size {})", cfg.q2_size),
            m => format!("{m:?}"),
        },
        cfg.items,
        cfg.customers
    );
    println!(
        "design  storage {}  gc {}  index pointers {}  secondary indexes {}",
        a.storage.name(),
        a.gc.name(),
        strata::matrix::pointers_name(a.index_pointers),
        a.index.name()
    );
    if huge_pages != HugePages::load_where_supported() {
        println!("huge pages: {huge_pages:?} (--huge-pages)");
    }
    if !cfg.prefetch {
        println!("NewOrder without prefetch (--no-prefetch)");
    }
    if cfg.by_name != tpcc::ByName::Index {
        println!(
            "customers by last name: {} (--by-name; no customer_by_last index)",
            cfg.by_name.name()
        );
    }
    if cfg.warehouse_pick != tpcc::WarehousePick::Fixed {
        println!(
            "warehouse drawn per transaction: {} (--warehouse-pick)",
            cfg.warehouse_pick.name()
        );
    }
    println!("load      {:.2} s", r.load_s);
    println!(
        "{:<13} {:>12} {:>12} {:>10} {:>10}  aborts by reason",
        "type", "committed/s", "aborted/s", "p50 us", "p99 us"
    );
    for t in &r.run.per_type {
        if t.committed + t.aborted == 0 {
            continue;
        }
        let reasons: Vec<String> = t
            .aborts_by_reason
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "{:<13} {:>12.0} {:>12.0} {:>10.1} {:>10.1}  {}",
            t.name,
            t.committed_per_s,
            t.aborted_per_s,
            t.latency.p50_us,
            t.latency.p99_us,
            reasons.join(", ")
        );
    }
    println!(
        "{:<13} {:>12.0} {:>12.0}  ({:.2}% aborted)",
        "all",
        r.run.committed_per_s,
        r.run.aborted_per_s,
        100.0 * r.run.abort_rate
    );
    if let Some(l) = &r.log {
        println!(
            "log       {}  {:.2} records/txn ({:.2} operation records)  {:.1} bytes/txn  {} flushes",
            a.log_granularity.name(),
            l.records_per_committed,
            l.operation_records_per_committed,
            l.bytes_per_committed,
            l.flushes
        );
    }
    if let Some(t) = &r.time_breakdown {
        println!("time per committed txn, us (share): {}", t.line());
    }
    let c = &r.consistency;
    println!(
        "consistency conditions 1-4 hold: {} warehouses, {} districts, {} orders, {} new orders, {} order lines",
        c.warehouses_checked, c.districts_checked, c.orders, c.new_orders, c.order_lines
    );
    if let Some(sw) = &shared_writes {
        sw.print();
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_warehouse_pick(s: &str) -> Result<tpcc::WarehousePick, String> {
    s.parse()
}

fn parse_log_granularity(s: &str) -> Result<LogGranularity, String> {
    LogGranularity::ALL
        .into_iter()
        .find(|g| g.name() == s)
        .ok_or_else(|| format!("expected per-transaction or per-operation, got {s:?}"))
}

/// `--mix`: a name or five percentages (see `TpccArgs::mix`); that they add
/// up to 100 is `TpccConfig::validate`'s check.
fn parse_mix(s: &str) -> Result<[u32; 6], String> {
    match s {
        "standard" => return Ok(tpcc::STANDARD_MIX),
        "np" => return Ok(tpcc::NEW_ORDER_PAYMENT),
        "hybrid" => return Ok(tpcc::HYBRID_MIX),
        _ => {}
    }
    let mut parts: Vec<u32> = s
        .split(',')
        .map(|p| p.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("expected standard, np, hybrid or percentages, got {s:?}"))?;
    if parts.len() == 5 {
        parts.push(0);
    }
    parts
        .try_into()
        .map_err(|p: Vec<u32>| format!("expected five or six percentages, got {}", p.len()))
}
