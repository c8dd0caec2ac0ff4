//! `strata`: benchmarks and checks for the Strata MVCC engine.

mod alloc;
mod bench;
mod check;
mod durable_cmd;
mod executor;
mod explore;
mod export_cmd;
mod file_cmd;
mod htap_cmd;
mod inspect_cmd;
mod llt_cmd;
mod plot;
mod presets;
mod progress;
mod read_mostly_cmd;
mod reproduce;
mod shared_writes;
mod tpcc_cmd;
mod ycsb_args;
mod ycsb_core_cmd;

use std::process::ExitCode;

// The engine allocates and frees a version per write; glibc's malloc/free
// were about 30% of the instructions of an update-heavy run (callgrind).
// mimalloc, through our own entry points (`alloc`).
#[global_allocator]
static GLOBAL: alloc::MiMalloc = alloc::MiMalloc;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use strata::Protocol;

const EXAMPLES: &str = "\
Examples:
  strata protocols
  strata presets
  strata matrix
  strata bench ycsb --preset hekaton --threads 2
  strata bench ycsb --protocol ssn --records 1000000 --threads 2 --duration 10
  strata bench ycsb --protocol mvocc --read-ratio 0.5 --theta 0.9 --json
  strata bench ycsb --mix update-intensive --engine all --records 1000000
  strata bench ycsb --ro-threads 1 --no-ro-hint --series series.csv
  strata bench tpcc --warehouses 2 --threads 2 --stock-scan
  strata bench read-mostly --protocol occ --write-fraction 0.001 --reads 1000 --threads 2 --duration 5
  strata explore --read-ratio 0.5 --grid theta=0,0.9 --budget 10m
  strata explore --workload tpcc --protocol ssn,mvto,occ --budget 5m
  strata explore --workload-file workloads/orders.toml --budget 10m
  strata bench file --workload-file workloads/orders.toml --protocol mvto --json
  strata explore --study
  strata reproduce --list
  strata reproduce contention --duration 1 --out results
  strata reproduce ermia-fig1 --out results
  strata check --protocol ssi --workload predicate --clients 8 --txns 20000
  strata check --protocol si --workload write-skew    # finds G2-item: allowed by SI, exits 3
  strata check --protocol ssn --strict                # real-time-only cycles: allowed by SSN, exits 3
  strata check --protocol ssn --gc none --workload register --blind-writes   # SSN's blind overwrites, ordered by the kept versions
  strata check --protocol mvocc --workload predicate --scan-width 8 --delete-fraction 0.5
  strata check --protocol mvto --storage delta --workload register
  strata inspect /var/lib/myapp/db --json
  strata export /var/lib/myapp/db --table accounts --format csv --out accounts.csv
  strata import /var/lib/myapp/copy --table accounts --format csv --in accounts.csv
  strata export /var/lib/myapp/db --table accounts --with-schema --out accounts.jsonl
  strata import /tmp/newdb --create --key id --table accounts --in accounts.jsonl";

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "Benchmarks and isolation checks for the Strata in-memory MVCC engine",
    after_help = EXAMPLES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a benchmark against a freshly loaded database (in memory; `bench
    /// ycsb --durability` and `bench durable` also write a log to disk).
    #[command(subcommand)]
    Bench(Bench),
    /// Run a concurrent workload, record its history and check it for
    /// isolation anomalies. Exit code 0: none; 1: the protocol broke its
    /// promise (or the run failed); 3: anomalies its promise allows (SI's
    /// write skew; SSN's real-time-only cycles under --strict); 4: the
    /// cycle search ran out of --cycle-search-budget before it could rule
    /// out an anomaly the promise forbids (never taken as allowed).
    Check(CheckArgs),
    /// List the concurrency-control protocols.
    Protocols,
    /// Rerun a figure of one of the four studies reproduced here (the
    /// Peloton study, vDriver, ERMIA, MV-PBT; see --list): its sweep written
    /// to <out>/<figure>.csv and plotted to PNGs in <out>.
    Reproduce(reproduce::ReproduceArgs),
    /// Which design wins on a workload: every valid protocol x storage x GC
    /// x index pointers x index kind (narrow any with flags), searched by
    /// successive halving within --budget; a ranked table, a Pareto plot,
    /// a heatmap over --grid, and the winner's Options to paste. Trials go
    /// to <out>/trials.csv as measured; a rerun reuses them.
    Explore(Box<explore::ExploreArgs>),
    /// List the named configurations (Table 1 of the Peloton study, ERMIA).
    Presets,
    /// Print which protocol x storage x GC x index-pointer combinations are valid.
    Matrix,
    /// Show what a database directory holds: tables (columns, primary key,
    /// rows), secondary indexes, the checkpoint, the log, what recovery
    /// found. Reads only: nothing in the directory changes. Exit code 2 for
    /// a directory that is not a database, is damaged, or is open for
    /// writing.
    Inspect(inspect_cmd::InspectArgs),
    /// Write every row of a table, in primary-key order, as JSON lines or
    /// CSV (read-only: nothing in the directory changes). Bytes are hex,
    /// floats exact (NaN, inf, -inf by name), a CSV null the --null text;
    /// --with-schema puts the columns first, for `import --create`.
    Export(export_cmd::ExportArgs),
    /// Add rows from JSON lines or CSV (as `export` writes them) to a
    /// table, in durable transactions of --batch rows. A bad line (a wrong
    /// type, a missing or unknown column, a duplicate key without
    /// --replace) stops the import with its line number; the batches
    /// before it stay committed. Exit code 1 then, 2 for a missing
    /// database or table. --create makes the database and the table from
    /// the input's schema line (`export --with-schema`) or --schema, with
    /// primary key --key, after checking the whole input: a bad line is
    /// then exit code 2 and nothing on disk changes.
    Import(export_cmd::ImportArgs),
}

#[derive(Subcommand, Debug)]
enum Bench {
    /// YCSB-style key-value transactions: Zipfian keys, reads and updates.
    Ycsb(Box<YcsbArgs>),
    /// TPC-C: the five transactions, the standard mix, optional StockScan;
    /// checks the consistency conditions after the run.
    Tpcc(tpcc_cmd::TpccArgs),
    /// vDriver's long-lived-transaction workload: short updates, long
    /// readers joining and leaving; version space and the longest chain
    /// every second.
    Llt(Box<llt_cmd::LltArgs>),
    /// Durable commits: single-row inserts and updates through Strata's
    /// write-ahead log with group commit, against peers that fsync each
    /// commit (redb, RocksDB); txn/s and commit latency.
    Durable(durable_cmd::DurableArgs),
    /// ERMIA's read-mostly microbenchmark (Fig. 1): read many random rows
    /// of TPC-C's Stock table, update a small fraction of them.
    ReadMostly(Box<read_mostly_cmd::ReadMostlyArgs>),
    /// YCSB's core workloads A, B, D and E through a secondary index of
    /// either kind (MV-PBT's Fig. 15a): --workload a|b|d|e --index
    /// standard|mvpbt.
    YcsbCore(Box<ycsb_core_cmd::CoreArgs>),
    /// A workload described in a TOML or JSON file
    /// (docs/WORKLOAD_FILE.md), run on one design: --workload-file F
    /// --protocol --storage --gc --index-pointers --index.
    File(Box<file_cmd::FileArgs>),
    /// MV-PBT's HTAP mix (Fig. 3): YCSB A+E clients while an analytical
    /// reader holds an old snapshot, scans through the secondary index
    /// and queries a row whose chain grew: --index standard|mvpbt
    /// --chain-length N.
    Htap(Box<htap_cmd::HtapArgs>),
}

/// Parses a protocol name (`mvto`, `mvocc`, `mv2pl`, `si`, `ssn`, `ssi`, `occ`).
pub fn parse_protocol(s: &str) -> Result<Protocol, String> {
    s.parse::<Protocol>().map_err(|_| {
        let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        format!("expected one of {}", names.join(", "))
    })
}

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct YcsbArgs {
    /// Concurrency-control protocol.
    #[arg(long, default_value = "ssn", value_parser = parse_protocol)]
    pub protocol: Protocol,
    /// Rows loaded before the run.
    #[arg(long, default_value_t = 100_000)]
    pub records: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Measured run time, in seconds.
    #[arg(long, default_value_t = 5.0, value_parser = parse_seconds)]
    pub duration: f64,
    /// Unmeasured warm-up time before the run, in seconds.
    #[arg(long, default_value_t = 1.0, value_parser = parse_seconds)]
    pub warmup: f64,
    /// Operations (reads or updates) per transaction.
    #[arg(long, default_value_t = 10)]
    pub ops_per_txn: usize,
    /// Fraction of operations that are reads; 1.0 runs read-only transactions.
    #[arg(long, default_value_t = 0.8)]
    pub read_ratio: f64,
    /// Zipfian skew of the keys, in [0, 1]: 0 is uniform, 0.99 and 1 (the
    /// Peloton study's highest) are very hot.
    #[arg(long, default_value_t = 0.0)]
    pub theta: f64,
    /// Integer value columns per row (besides the key): N.
    #[arg(long, visible_alias = "attributes", default_value_t = 10)]
    pub columns: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `strata`; `noop` (the same driver loop with no engine calls, to
    /// measure the driver's own cost); a peer engine (`skipdb`, `fjall`,
    /// `redb`, `rocksdb`, `rocksdb-optimistic`; the RocksDB ones only in a
    /// build with the `rocksdb` cargo feature); `all`; or a comma list.
    #[arg(long, default_value = "strata")]
    pub engine: String,
    /// Garbage collection: `txn` (transaction-level, the default), `vac`
    /// (background vacuum), `coop` (cooperative, O2N only), `dead-zone`
    /// (vacuum that also prunes versions in the middle of a chain that no
    /// snapshot reads; vDriver's) or `none`.
    #[arg(long, default_value = "txn", value_parser = parse_gc)]
    pub gc: strata::GcPolicy,
    /// Background vacuum threads (with `--gc vac`).
    #[arg(long, default_value_t = 1)]
    pub gc_threads: usize,
    /// A named configuration (`strata presets`): its protocol, storage, GC
    /// and index pointers, except those given by their own flags.
    #[arg(long, value_parser = parse_preset)]
    pub preset: Option<strata::Preset>,
    /// What secondary-index entries point at: tuple-id, pkey or physical
    /// (physical needs n2o or o2n).
    #[arg(long, default_value = "tuple-id", value_parser = parse_pointers)]
    pub index_pointers: strata::IndexPointers,
    /// Flags that overrode the preset (filled after parsing, for the header).
    #[arg(skip)]
    pub overrides: Vec<String>,
    /// Run a GC pass after every this many commits on a thread.
    #[arg(long, default_value_t = strata::Options::default().gc_every_commits)]
    pub gc_every: u32,
    /// Print one JSON object instead of the summary (and no progress bars).
    #[arg(long)]
    pub json: bool,
    /// Version storage: n2o, o2n, time-travel, delta or siro (siro needs --gc dead-zone).
    #[arg(long, default_value = "n2o", value_parser = parse_storage)]
    pub storage: strata::VersionStorage,
    /// `none` (in memory), `group` (write-ahead log, commit waits for the
    /// group fsync) or `async` (log flushed in the background).
    #[arg(long, value_enum, default_value_t = DurabilityArg::None)]
    pub durability: DurabilityArg,
    /// Directory of the write-ahead log (with `--durability group|async`).
    /// It must be new or empty: `strata bench` marks it as its own and empties
    /// it before each load, and refuses a directory holding anything else
    /// (your files or a real database are never deleted).
    #[arg(long)]
    pub wal_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub extra: ycsb_args::YcsbExtra,
}

/// `bench ycsb --durability`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityArg {
    None,
    Group,
    Async,
}

/// A workload run's result as a command sees it: a configuration error is
/// a usage error (one line, exit 2); any other failure is printed and the
/// command exits 1 (`None`).
pub fn workload_outcome<T>(
    r: Result<T, strata_workloads::WorkloadError>,
) -> Result<Option<T>, UsageError> {
    match r {
        Ok(r) => Ok(Some(r)),
        Err(strata_workloads::WorkloadError::Config(m)) => Err(UsageError(m)),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(None)
        }
    }
}

/// The longest time a flag of seconds takes: one year (365 days). Far
/// beyond it `Duration::from_secs_f64` panics (from about 1.8e19 s), and
/// well before that adding the duration to the clock overflows.
pub const MAX_SECONDS: f64 = 31_536_000.0;

/// The value parser of every flag of seconds (`--duration`, `--warmup`,
/// `--llt-start`, ...): a number from 0 to [`MAX_SECONDS`]. NaN, negative,
/// infinite and larger values are usage errors that name the flag and the
/// range (clap adds the flag).
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    let range = || format!("expected seconds from 0 to {MAX_SECONDS} (one year), got {s}");
    let v: f64 = s.trim().parse().map_err(|_| range())?;
    if (0.0..=MAX_SECONDS).contains(&v) {
        // -0 is 0.
        Ok(v.abs())
    } else {
        Err(range())
    }
}

/// A `--flag` of seconds as a duration: from 0 to [`MAX_SECONDS`] (the
/// flags' parser already holds them there; this also covers defaults
/// computed from them).
pub fn seconds(flag: &str, v: f64) -> Result<std::time::Duration, UsageError> {
    if (0.0..=MAX_SECONDS).contains(&v) {
        Ok(std::time::Duration::from_secs_f64(v.abs()))
    } else {
        Err(UsageError(format!(
            "--{flag} must be from 0 to {MAX_SECONDS} seconds (one year), got {v}"
        )))
    }
}

/// The run flags `bench read-mostly`, `ycsb-core` and `htap` share
/// (flattened into each command's arguments).
#[derive(clap::Args, Debug, Clone)]
pub struct RunFlags {
    /// Measured run time, in seconds.
    #[arg(long, default_value_t = 5.0, value_parser = parse_seconds)]
    pub duration: f64,
    /// Unmeasured warm-up time before the run, in seconds.
    #[arg(long, default_value_t = 0.5, value_parser = parse_seconds)]
    pub warmup: f64,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

impl RunFlags {
    /// (warm-up, measured duration), checked.
    pub fn times(&self) -> Result<(std::time::Duration, std::time::Duration), UsageError> {
        Ok((
            seconds("warmup", self.warmup)?,
            seconds("duration", self.duration)?,
        ))
    }
}

/// Refuses an output file that cannot be written, before a run measures
/// anything (a run that fails only when it writes its results loses them).
/// Creates the file (empty) if it does not exist; an existing one is left
/// as it is until the run overwrites it.
pub fn check_output_file(flag: &str, path: &std::path::Path) -> Result<(), UsageError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(drop)
        .map_err(|e| UsageError(format!("--{flag} {}: {e}", path.display())))
}

/// Memory the machine can give now (`MemAvailable`), if the OS says.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuses a run whose data would not fit in memory, before it loads for
/// seconds and dies in the allocator. `bytes` is an estimate from the
/// measured footprint (`strata bench ycsb` reports bytes per row: about 310
/// with 10 integer columns), so only a clearly impossible size is refused.
pub fn check_memory(what: &str, bytes: f64) -> Result<(), UsageError> {
    let Some(avail) = available_memory() else {
        return Ok(());
    };
    if bytes > avail as f64 {
        let gib = |b: f64| b / (1u64 << 30) as f64;
        return Err(UsageError(format!(
            "{what} needs about {:.1} GiB of memory; this machine has {:.1} GiB available",
            gib(bytes),
            gib(avail as f64)
        )));
    }
    Ok(())
}

/// Refuses an output directory that cannot be created, before a run.
pub fn check_output_dir(flag: &str, dir: &std::path::Path) -> Result<(), UsageError> {
    std::fs::create_dir_all(dir).map_err(|e| UsageError(format!("--{flag} {}: {e}", dir.display())))
}

/// clap's message on one line: its first paragraph (the error, and what
/// it names on the lines after: the missing arguments, the possible
/// values), without the usage and tips that follow a blank line.
fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if parts.is_empty() {
        return "error: invalid arguments".into();
    }
    parts.join(" ")
}

pub fn parse_pointers(s: &str) -> Result<strata::IndexPointers, String> {
    (strata::IndexPointers::ALL.into_iter())
        .find(|&p| strata::matrix::pointers_name(p) == s)
        .ok_or_else(|| format!("expected one of tuple-id, pkey, physical, got {s:?}"))
}

pub fn parse_storage(s: &str) -> Result<strata::VersionStorage, String> {
    s.parse().map_err(|e: strata::Error| e.to_string())
}

pub fn parse_gc(s: &str) -> Result<strata::GcPolicy, String> {
    match s {
        "transaction" => Ok(strata::GcPolicy::TransactionLevel),
        other => other.parse().map_err(|e: strata::Error| e.to_string()),
    }
}

fn parse_preset(s: &str) -> Result<strata::Preset, String> {
    s.parse().map_err(|e: strata::Error| e.to_string())
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScansArg {
    Callback,
    Iterator,
    Reverse,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadArg {
    /// Appends to, deletes of and reads of lists (most informative).
    ListAppend,
    /// Read-modify-write writes and reads of registers.
    Register,
    /// List appends and deletes mixed with range scans (phantoms).
    Predicate,
    /// Read two keys of a pair, append to one (SI allows write skew).
    WriteSkew,
}

#[derive(Args, Debug, Clone)]
#[command(allow_negative_numbers = true)]
pub struct CheckArgs {
    /// Concurrency-control protocol.
    #[arg(long, default_value = "ssn", value_parser = parse_protocol)]
    pub protocol: Protocol,
    /// Workload to generate.
    #[arg(long, value_enum, default_value_t = WorkloadArg::ListAppend)]
    pub workload: WorkloadArg,
    /// Concurrent client threads.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Transactions to run.
    #[arg(long, default_value_t = 5000)]
    pub txns: usize,
    /// Run and check the transactions as consecutive segments of at most
    /// this many, so that memory stays flat however large --txns: each
    /// segment works on keys of its own, starts once the one before has
    /// completed, is checked alone (exactly as strong: no dependency joins
    /// two segments) and is then dropped, its rows deleted from the engine
    /// (which, under --gc none, keeps them).
    #[arg(long, default_value_t = 10_000)]
    pub segment_txns: usize,
    /// Keys in the key space.
    #[arg(long, default_value_t = 20)]
    pub keys: u64,
    /// Zipfian skew of the keys, in [0, 1).
    #[arg(long, default_value_t = 0.99)]
    pub skew: f64,
    /// Random seed of the workload generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Widest range scan, in keys (predicate workload).
    #[arg(long, default_value_t = strata_verify::GeneratorConfig::default().max_scan_width)]
    pub scan_width: u64,
    /// Fraction of scans that stop after their first one or two lists
    /// (`scan_limit`: their phantom protection ends at the last key read;
    /// predicate workload).
    #[arg(long, default_value_t = strata_verify::GeneratorConfig::default().limited_scan_fraction)]
    pub limited_scans: f64,
    /// Fraction of list writes that delete the key, so that keys disappear
    /// and come back and scanned ranges keep changing (list workloads).
    #[arg(long, default_value_t = strata_verify::GeneratorConfig::default().delete_fraction)]
    pub delete_fraction: f64,
    /// List writes a key gets before a fresh key takes its place (the
    /// predicate workload moves all its keys at once), so that no list,
    /// and no read of one, grows with the run: memory and time stay
    /// linear in --txns.
    #[arg(long, default_value_t = strata_verify::GeneratorConfig::default().max_writes_per_key)]
    pub max_writes_per_key: u64,
    /// Also check real-time order (strict serializability). MVTO, MVOCC,
    /// MV2PL and SSI promise it; SSN (and MVTO's read-only snapshots) are
    /// serializable but not strictly, so their real-time-only cycles are
    /// reported as expected (exit code 3).
    #[arg(long)]
    pub strict: bool,
    /// Run transactions without writes as read-only snapshot transactions.
    #[arg(long)]
    pub read_only_snapshots: bool,
    /// How scans read their rows: `callback` (`scan_while`), `iterator`
    /// (`Transaction::range`) or `reverse` (the iterator from the high
    /// end); a limited scan stops early either way.
    #[arg(long, value_enum, default_value_t = ScansArg::Callback)]
    pub scans: ScansArg,
    /// Register workload: write every even value blind (an update with no
    /// read of the key first), as SSN's blind overwrites allow, and order
    /// those writes by the versions the engine kept (needs `--gc none`).
    #[arg(long)]
    pub blind_writes: bool,
    /// Version storage: n2o, o2n, time-travel, delta or siro (siro needs --gc dead-zone).
    #[arg(long, default_value = "n2o", value_parser = parse_storage)]
    pub storage: strata::VersionStorage,
    /// Garbage collection: txn, vac, coop (O2N only), dead-zone or none;
    /// passes run every few commits, racing the clients.
    #[arg(long, default_value = "txn", value_parser = parse_gc)]
    pub gc: strata::GcPolicy,
    /// Edges the search for a cycle with one anti-dependency (G-single)
    /// may examine per strongly connected component. A search that runs
    /// out reports the component's G2 cycle as search-incomplete, exit
    /// code 4 where nothing else decides.
    #[arg(long, default_value_t = strata_verify::CheckOptions::default().cycle_search_budget)]
    pub cycle_search_budget: usize,
}

/// A user error: printed as one line, exit code 2.
pub struct UsageError(pub String);

fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(both) => both,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
                || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
            eprintln!(
                "{} (see 'strata --help')",
                one_line(&e.render().to_string())
            );
            return ExitCode::from(2);
        }
    };
    // Ctrl-C ends the run early with the summary of what it measured (a
    // second one quits at once).
    let _ = ctrlc::set_handler(|| {
        if strata_workloads::driver::interrupted() {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: reporting what was measured so far (Ctrl-C again to quit)");
        strata_workloads::driver::interrupt();
    });
    let result = match cli.command {
        Command::Bench(Bench::Ycsb(mut args)) => {
            let given = matches
                .subcommand_matches("bench")
                .and_then(|b| b.subcommand_matches("ycsb"));
            let explicit = |id: &str| {
                given.is_some_and(|m| {
                    // Argument ids are the field names: --index-pointers
                    // is index_pointers.
                    m.value_source(&id.replace('-', "_"))
                        == Some(clap::parser::ValueSource::CommandLine)
                })
            };
            args.overrides = presets::apply(&mut args, &explicit);
            bench::ycsb(&args)
        }
        Command::Bench(Bench::Tpcc(args)) => tpcc_cmd::run(&args),
        Command::Bench(Bench::Llt(args)) => llt_cmd::run(&args),
        Command::Bench(Bench::Durable(args)) => durable_cmd::run(&args),
        Command::Bench(Bench::ReadMostly(args)) => read_mostly_cmd::run(&args),
        Command::Bench(Bench::YcsbCore(args)) => ycsb_core_cmd::run(&args),
        Command::Bench(Bench::Htap(args)) => htap_cmd::run(&args),
        Command::Bench(Bench::File(args)) => file_cmd::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Protocols => {
            protocols();
            Ok(ExitCode::SUCCESS)
        }
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Explore(args) => explore::run(&args),
        Command::Presets => {
            presets::print_presets();
            Ok(ExitCode::SUCCESS)
        }
        Command::Matrix => {
            presets::print_matrix();
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect(args) => inspect_cmd::run(&args),
        Command::Export(args) => export_cmd::export(&args),
        Command::Import(args) => export_cmd::import(&args),
    };
    match result {
        Ok(_) if strata_workloads::driver::interrupted() => ExitCode::from(130),
        Ok(code) => code,
        Err(UsageError(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn protocols() {
    for p in Protocol::ALL {
        let what = match p {
            Protocol::Mvto => {
                "multi-version timestamp ordering (read timestamps in version headers)"
            }
            Protocol::Mvocc => {
                "multi-version optimistic CC: snapshot reads, read/scan-set validation at commit"
            }
            Protocol::Mv2pl => "multi-version two-phase locking, no-wait",
            Protocol::Si => "snapshot isolation, first-updater-wins (allows write skew)",
            Protocol::SiSsn => "SI + Serial Safety Net (ERMIA); the default",
            Protocol::SiSsi => "SI + Cahill's serializable snapshot isolation",
            Protocol::Occ => {
                "Silo-style OCC (ERMIA's Silo-OCC): newest-committed reads, read/scan-set validation at commit, readers too"
            }
        };
        let level = if p.is_serializable() {
            "serializable"
        } else {
            "snapshot isolation"
        };
        println!("{:<6} {:<19} {what}", p.name(), level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_run_from_zero_to_a_year() {
        assert_eq!(parse_seconds("0"), Ok(0.0));
        assert_eq!(parse_seconds("-0"), Ok(0.0));
        assert_eq!(parse_seconds("0.25"), Ok(0.25));
        assert_eq!(parse_seconds("31536000"), Ok(MAX_SECONDS));
        for bad in [
            "31536000.5",
            "1e20",
            "-1",
            "-1e-9",
            "NaN",
            "inf",
            "-inf",
            "",
            "soon",
        ] {
            let e = parse_seconds(bad).expect_err(bad);
            assert!(e.contains("from 0 to 31536000 (one year)"), "{bad}: {e}");
        }
        let year = seconds("duration", MAX_SECONDS).ok().expect("a year");
        assert_eq!(year.as_secs(), 31_536_000);
        assert!(seconds("duration", f64::NAN).is_err());
        assert!(seconds("duration", 1e20).is_err());
    }
}
