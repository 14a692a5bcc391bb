//! The judge's rules, one file each, behind one trait and registered in one list ([`RULES`]).
//! A rule carries its name, its matrix code and its docs line ([`Check`]); a new rule is a new
//! file plus one line in the `register!` list below, which declares its module and lists it.
//! Each rule says PASS or FAIL only on what was observed, and NOT JUDGED, naming what is missing
//! and how to get it, where the evidence is not there (docs/protocol.md, section 8).

pub mod give_up;

mod check;
mod scope;

pub use check::{Check, MovingCheck};
pub use keeps_working::HUNG_S;
pub use no_loop::LOOP_REACTIONS;
pub use no_storm::STORM_PER_CONNECTION;
pub use relaxed_timeout::{BACKSTOP_S, RELAXED_TIMEOUT_S, TAIL_S};
pub use scope::{died_at, earliest, offset, round, OptInCounts, Scope};
pub use smigrated_refresh::{LEARN_WITHIN_S, REDIRECTS_PER_CONNECTION};

/// Declares each rule's module and lists the rule in [`RULES`], from one line per rule
/// (`module::Rule`), so that a rule is registered once.
macro_rules! register {
    ($($module:ident::$rule:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every rule, in the order the grade lists them and a matrix cell lists their codes.
        pub static RULES: &[&dyn Check] = &[$(&$module::$rule),*];
    };
}

register! {
    survives::Survives,
    keeps_working::KeepsWorking,
    opt_in::OptInRule,
    moved_before_close::MovedBeforeClose,
    no_lost_commands::NoLostCommands,
    no_storm::NoStorm,
    no_loop::NoLoop,
    relaxed_timeout::RelaxedTimeout,
    timeout_restored::TimeoutRestored,
    smigrated_refresh::SmigratedRefresh,
    sharded_resubscribe::ShardedResubscribe,
}
