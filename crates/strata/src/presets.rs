//! Named presets: the configurations of real systems that Table 1 of the
//! Peloton study lists, and ERMIA's.
//!
//! Source: Wu, Arulraj, Lin, Xian, Pavlo, *An Empirical Evaluation of
//! In-Memory Multi-Version Concurrency Control*, PVLDB 10(7), 2017,
//! Table 1 ("MVCC implementations"), transcribed column by column:
//!
//! ```text
//!  system     protocol   version storage   garbage collection  index
//!  Oracle     MV2PL      delta             tuple-level (VAC)   logical (tuple id)
//!  Postgres   MV2PL/SSI  append-only O2N   tuple-level (VAC)   physical
//!  MySQL      MV2PL      delta             tuple-level (VAC)   logical (pkey)
//!  HYRISE     MVOCC      append-only N2O   -                   physical
//!  Hekaton    MVOCC      append-only O2N   tuple-level (COOP)  physical
//!  MemSQL     MVOCC      append-only N2O   tuple-level (VAC)   physical
//!  SAP HANA   MV2PL      time-travel       hybrid              logical (tuple id)
//!  NuoDB      MV2PL      append-only N2O   tuple-level (VAC)   logical (pkey)
//!  HyPer      MVOCC      delta             transaction-level   logical (tuple id)
//! ```
//!
//! ERMIA (Kim et al., SIGMOD 2016): SI + SSN, append-only N2O,
//! epoch-based (transaction-level) GC, logical tuple-id indirection.
//!
//! vDriver (Kim et al., SIGMOD 2020), as built into MySQL/InnoDB: snapshot
//! reads (SI), SIRO versioning (current and previous version in-row, older
//! ones off-row in classified segments), dead-zone pruning, secondary
//! indexes by primary key.
//!
//! Where a system needs something Strata does not have, the preset takes
//! the nearest valid configuration and says so in [`PresetInfo::notes`]
//! (printed by `strata presets`): HANA's hybrid GC becomes
//! transaction-level, HYRISE's unlisted GC becomes transaction-level,
//! Postgres's MV2PL/SSI becomes SI+SSI (its serializable level), and
//! pointer schemes this build does not implement fall back to tuple ids.
//! Table 1 names the logical pointer's target: tuple id (Oracle, HANA,
//! HyPer) or primary key (MySQL, NuoDB); the presets follow it.

use crate::error::{Error, Result};
use crate::matrix::pointers_name;
use crate::options::{GcPolicy, IndexPointers, Options, Protocol, VersionStorage};

/// A named configuration (see the module doc for the source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    Oracle,
    Postgres,
    MySql,
    Hyrise,
    Hekaton,
    MemSql,
    Hana,
    NuoDb,
    HyPer,
    Ermia,
    VDriver,
}

/// What a preset is, where it comes from, and how Strata maps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetInfo {
    pub preset: Preset,
    /// The row of the source table, as printed there.
    pub paper: &'static str,
    /// The options Strata uses.
    pub options: Options,
    /// Every place where Strata's configuration differs from the paper's.
    pub notes: Vec<String>,
}

impl Preset {
    pub const ALL: [Preset; 11] = [
        Preset::Oracle,
        Preset::Postgres,
        Preset::MySql,
        Preset::Hyrise,
        Preset::Hekaton,
        Preset::MemSql,
        Preset::Hana,
        Preset::NuoDb,
        Preset::HyPer,
        Preset::Ermia,
        Preset::VDriver,
    ];

    /// A short stable name (`oracle`, `postgres`, `mysql`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Preset::Oracle => "oracle",
            Preset::Postgres => "postgres",
            Preset::MySql => "mysql",
            Preset::Hyrise => "hyrise",
            Preset::Hekaton => "hekaton",
            Preset::MemSql => "memsql",
            Preset::Hana => "hana",
            Preset::NuoDb => "nuodb",
            Preset::HyPer => "hyper",
            Preset::Ermia => "ermia",
            Preset::VDriver => "vdriver",
        }
    }

    /// The source row, the configuration wanted, and notes on the
    /// dimensions Strata cannot take literally.
    fn wanted(
        self,
    ) -> (
        &'static str,
        Protocol,
        VersionStorage,
        GcPolicy,
        IndexPointers,
        Vec<&'static str>,
    ) {
        use GcPolicy::*;
        use IndexPointers::*;
        use Protocol::*;
        use VersionStorage::*;
        match self {
            Preset::Oracle => ("Table 1: MV2PL, delta, tuple-level VAC, logical (TupleId)", Mv2pl, Delta, Vacuum, LogicalTupleId, vec![]),
            Preset::Postgres => (
                "Table 1: MV2PL/SSI, append-only O2N, tuple-level VAC, physical",
                SiSsi, AppendOldToNew, Vacuum, Physical,
                vec!["protocol MV2PL/SSI -> SI+SSI (Postgres's SERIALIZABLE level)"],
            ),
            Preset::MySql => ("Table 1: MV2PL, delta, tuple-level VAC, logical (PKey)", Mv2pl, Delta, Vacuum, LogicalPrimaryKey, vec![]),
            Preset::Hyrise => (
                "Table 1: MVOCC, append-only N2O, GC not listed, physical",
                Mvocc, AppendNewToOld, TransactionLevel, Physical,
                vec!["GC not listed in Table 1 -> transaction-level"],
            ),
            Preset::Hekaton => ("Table 1: MVOCC, append-only O2N, tuple-level COOP, physical", Mvocc, AppendOldToNew, Cooperative, Physical, vec![]),
            Preset::MemSql => ("Table 1: MVOCC, append-only N2O, tuple-level VAC, physical", Mvocc, AppendNewToOld, Vacuum, Physical, vec![]),
            Preset::Hana => (
                "Table 1: MV2PL, time-travel, hybrid GC, logical (TupleId)",
                Mv2pl, TimeTravel, TransactionLevel, LogicalTupleId,
                vec!["hybrid GC -> transaction-level (Strata has no hybrid GC)"],
            ),
            Preset::NuoDb => ("Table 1: MV2PL, append-only N2O, tuple-level VAC, logical (PKey)", Mv2pl, AppendNewToOld, Vacuum, LogicalPrimaryKey, vec![]),
            Preset::HyPer => ("Table 1: MVOCC, delta, transaction-level, logical (TupleId)", Mvocc, Delta, TransactionLevel, LogicalTupleId, vec![]),
            Preset::Ermia => ("ERMIA: SI+SSN, append-only N2O, epoch-based (transaction-level), logical tuple id (indirection array)", SiSsn, AppendNewToOld, TransactionLevel, LogicalTupleId, vec![]),
            Preset::VDriver => (
                "vDriver (in MySQL/InnoDB): snapshot reads, SIRO versioning, dead-zone pruning, logical (PKey)",
                Si, Siro, DeadZone, LogicalPrimaryKey,
                vec![],
            ),
        }
    }

    /// The preset's source, options and mapping notes.
    pub fn info(self) -> PresetInfo {
        let (paper, p, s, gc, ptr, notes) = self.wanted();
        let mut notes: Vec<String> = notes.into_iter().map(String::from).collect();
        let mut options = Options::default()
            .protocol(p)
            .version_storage(s)
            .gc(gc)
            .index_pointers(ptr);
        if let Err(Error::InvalidConfig(why)) = options.validate() {
            // Only pointer schemes can be missing from a build; every other
            // dimension above is implemented and valid.
            options.index_pointers = IndexPointers::LogicalTupleId;
            notes.push(format!(
                "{} pointers -> tuple-id (refused here: {why})",
                pointers_name(ptr)
            ));
        }
        if self == Preset::Ermia {
            // As published: SI's first-updater-wins on every write.
            options.ssn_blind_writes = false;
        }
        PresetInfo {
            preset: self,
            paper,
            options,
            notes,
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s) || s.eq_ignore_ascii_case(&format!("{p:?}")))
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "unknown preset {s:?}; expected one of {}",
                    Preset::ALL.map(|p| p.name()).join(", ")
                ))
            })
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Options {
    /// The options of a named system configuration (see [`Preset`]).
    pub fn preset(p: Preset) -> Options {
        p.info().options
    }

    /// [`Options::preset`] by name (`"hekaton"`, `"Postgres"`, ...).
    pub fn preset_named(name: &str) -> Result<Options> {
        Ok(Options::preset(name.parse()?))
    }
}

/// The presets as a Markdown table (the README prints it; a test compares).
pub fn presets_markdown() -> String {
    let mut s = String::from(
        "| preset | source | protocol | storage | gc | pointers | mapped |\n|---|---|---|---|---|---|---|\n",
    );
    for p in Preset::ALL {
        let i = p.info();
        let o = &i.options;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            p,
            i.paper,
            o.protocol,
            o.version_storage,
            o.gc,
            pointers_name(o.index_pointers),
            if i.notes.is_empty() {
                "as listed".to_string()
            } else {
                i.notes.join("; ")
            }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_named() {
        for p in Preset::ALL {
            let i = p.info();
            assert!(i.options.validate().is_ok(), "{p}: {:?}", i.options);
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
            assert_eq!(Options::preset_named(p.name()).unwrap(), i.options);
        }
        assert!(matches!(
            "sybase".parse::<Preset>(),
            Err(Error::InvalidConfig(m)) if m.contains("hekaton")
        ));
        assert_eq!("Hekaton".parse::<Preset>().unwrap(), Preset::Hekaton);
    }

    #[test]
    fn presets_follow_table_1() {
        let h = Options::preset(Preset::Hekaton);
        assert_eq!(
            (h.protocol, h.version_storage, h.gc),
            (
                Protocol::Mvocc,
                VersionStorage::AppendOldToNew,
                GcPolicy::Cooperative
            )
        );
        let o = Options::preset(Preset::Oracle);
        assert_eq!(
            (o.protocol, o.version_storage, o.gc),
            (Protocol::Mv2pl, VersionStorage::Delta, GcPolicy::Vacuum)
        );
        // Table 1: HYRISE keeps its chains newest-to-oldest, NuoDB's and
        // MySQL's logical pointers hold the primary key.
        let hy = Options::preset(Preset::Hyrise);
        assert_eq!(
            (hy.protocol, hy.version_storage, hy.index_pointers),
            (
                Protocol::Mvocc,
                VersionStorage::AppendNewToOld,
                IndexPointers::Physical
            )
        );
        for p in [Preset::NuoDb, Preset::MySql] {
            let i = p.info();
            let (_, _, _, _, ptr, _) = p.wanted();
            assert_eq!(ptr, IndexPointers::LogicalPrimaryKey, "{p}");
            assert!(i.paper.contains("PKey"), "{p}");
        }
        let e = Options::preset(Preset::Ermia);
        assert_eq!(
            (e.protocol, e.version_storage, e.gc, e.index_pointers),
            (
                Protocol::SiSsn,
                VersionStorage::AppendNewToOld,
                GcPolicy::TransactionLevel,
                IndexPointers::LogicalTupleId
            )
        );
        assert!(!e.ssn_blind_writes, "ERMIA's SI+SSN: first updater wins");
        assert!(Options::default().ssn_blind_writes);
        // A substitution is always said.
        let hana = Preset::Hana.info();
        assert!(hana.notes.iter().any(|n| n.contains("hybrid")));
        for p in Preset::ALL {
            let i = p.info();
            let (_, _, _, _, ptr, _) = p.wanted();
            if i.options.index_pointers != ptr {
                assert!(i.notes.iter().any(|n| n.contains("pointers")), "{p}");
            }
        }
    }

    /// No preset runs MVTO itself, but a preset switched to it (`bench
    /// --preset X --protocol mvto`) reads by the study's rule (Wu et al.
    /// §3.1): a read of a version another running transaction has
    /// write-locked aborts.
    #[test]
    fn presets_keep_the_studys_mvto_read_rule() {
        use crate::options::MvtoLockedRead;
        assert_eq!(Options::default().mvto_locked_read, MvtoLockedRead::Abort);
        for p in Preset::ALL {
            assert_eq!(
                Options::preset(p).mvto_locked_read,
                MvtoLockedRead::Abort,
                "{p}"
            );
        }
        for r in MvtoLockedRead::ALL {
            assert_eq!(r.name().parse::<MvtoLockedRead>(), Ok(r));
            assert_eq!(r.to_string(), r.name());
        }
        assert!(matches!(
            "sometimes".parse::<MvtoLockedRead>(),
            Err(crate::Error::InvalidConfig(_))
        ));
    }
}
