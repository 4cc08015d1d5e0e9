//! The two-sample tests `kbench compare --test` chooses from, behind one
//! trait (after benchstat's `Assumption`): a test has a name, a label,
//! the confidence levels it can give, and an [`Outcome`] that says in one
//! line what it found. Reports show any test through these and never ask
//! which one ran.
//!
//! A new test is its own file in `stats/` implementing [`TwoSample`] for
//! a unit struct and [`Outcome`] for its result, and one line in
//! [`TESTS`] (`stats/mod.rs`).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::Sample;

/// A test of a contender (`b`) against a baseline (`a`).
pub trait TwoSample: Sync {
    /// The name `--test` takes and the JSON carries (`welch`).
    fn name(&self) -> &'static str;
    /// What `--test`'s help says of it.
    fn help(&self) -> &'static str;
    /// How a report's heading names it (`Welch's t`).
    fn label(&self) -> &'static str;
    /// Whether it gives intervals at `confidence` percent; else the
    /// levels it has, as a one-line error.
    fn check(&self, _confidence: f64) -> Result<(), String> {
        Ok(())
    }
    /// Whether ministat's own report of the values is this test's (so
    /// `--compat=2015` may print Debian's `ministat` output whole).
    fn is_ministat(&self) -> bool {
        false
    }
    /// Compare `b` with `a` at `confidence` percent (a level `check`
    /// accepted).
    fn run(&self, a: &Sample, b: &Sample, confidence: f64) -> Arc<dyn Outcome>;
}

/// What a test found.
pub trait Outcome: erased_serde::Serialize + fmt::Debug + Send + Sync + Any {
    /// The result as a report shows it; `confidence` in percent as the
    /// user gave it, `unit` the values' unit.
    fn summary(&self, confidence: f64, unit: &str) -> Shown;
}

/// How a report shows an [`Outcome`].
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    /// One line of words and numbers (the renderer wraps it).
    Line(String),
    /// ministat's "Difference at ..." block at this index of
    /// `student::LEVELS`, which the renderer prints in the chosen
    /// ministat's own format from the two sets' moments.
    Ministat { level: usize },
}

/// A test as the command line and a comparison hold it.
#[derive(Clone, Copy)]
pub struct Test(pub &'static dyn TwoSample);

pub use super::TESTS;

impl Test {
    /// The test named `name`.
    #[cfg(test)]
    pub fn by_name(name: &str) -> Option<Test> {
        TESTS.iter().copied().find(|t| t.0.name() == name)
    }
}

impl std::ops::Deref for Test {
    type Target = dyn TwoSample;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Test {
    fn eq(&self, other: &Test) -> bool {
        self.0.name() == other.0.name()
    }
}

impl Eq for Test {}

impl fmt::Debug for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl serde::Serialize for Test {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

/// One test's outcome, serialised as its fields after `"test": NAME`.
#[derive(Clone, Debug)]
pub struct Detail {
    pub test: Test,
    pub outcome: Arc<dyn Outcome>,
}

impl Detail {
    /// `test` run on `b` against `a`.
    pub fn of(test: Test, a: &Sample, b: &Sample, confidence: f64) -> Detail {
        Detail {
            test,
            outcome: test.run(a, b, confidence),
        }
    }

    /// The outcome as the test's own result type, if it is `T`.
    #[cfg(test)]
    pub fn get<T: 'static>(&self) -> Option<&T> {
        let any: &dyn Any = &*self.outcome;
        any.downcast_ref()
    }
}

impl serde::Serialize for Detail {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Tagged<'a> {
            test: &'static str,
            #[serde(flatten)]
            outcome: &'a dyn erased_serde::Serialize,
        }
        Tagged {
            test: self.test.name(),
            outcome: &*self.outcome,
        }
        .serialize(s)
    }
}

/// ` (too few ...)` after a line, when a set is too small to decide.
pub fn few(too_few: Option<super::TooFew>) -> String {
    too_few.map(|t| format!(" ({t})")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Confidence;
    use crate::stats::bootstrap::{BootResult, Bootstrap};
    use crate::stats::student::{self, MinistatDiff, Moments};
    use crate::stats::ttest::TTest;
    use crate::stats::utest::UTest;

    /// The encoding comparisons had before the tests were behind the
    /// trait: an enum tagged by `test`.
    #[derive(serde::Serialize)]
    #[serde(tag = "test", rename_all = "lowercase")]
    enum Before {
        Student(MinistatDiff),
        Welch(TTest),
        Mwu(UTest),
        Bootstrap(BootResult),
    }

    #[test]
    fn each_outcome_serialises_as_the_tagged_enum_did() {
        let a = Sample::new(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let b = Sample::new(&[2.0, 3.5, 4.0, 5.5, 6.0]).unwrap();
        let conf = Confidence::percent(95.0);
        let before = [
            Before::Student(student::ministat_diff(
                Moments::of(&a),
                Moments::of(&b),
                student::level_index(95.0).unwrap(),
                student::RelativeFormula::FreeBsdMain,
            )),
            Before::Welch(TTest::welch(&a, &b, conf)),
            Before::Mwu(UTest::new(&a, &b, conf)),
            Before::Bootstrap(
                Bootstrap {
                    resamples: 10_000,
                    seed: 1,
                }
                .ratio_of_means(&a, &b, conf),
            ),
        ];
        for (t, old) in TESTS.iter().zip(&before) {
            let now = serde_json::to_string(&Detail::of(*t, &a, &b, 95.0)).unwrap();
            assert_eq!(now, serde_json::to_string(old).unwrap(), "{}", t.name());
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for t in TESTS {
            assert_eq!(Test::by_name(t.name()), Some(*t));
            assert_eq!(TESTS.iter().filter(|u| u.name() == t.name()).count(), 1);
        }
        assert_eq!(Test::by_name("none"), None);
    }

    #[test]
    fn a_ministat_level_is_checked() {
        assert!(Test::STUDENT.check(95.0).is_ok());
        let e = Test::STUDENT.check(97.0).unwrap_err();
        assert!(e.contains("80, 90, 95, 98, 99 and 99.5"), "{e}");
        assert!(Test::WELCH.check(97.0).is_ok());
    }
}
