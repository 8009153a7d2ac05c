//! The states of jobs and runs and the stages of a run, as the catalog stores them and the
//! hosts report them. Their text form is the one place such a name is spelled: everything
//! else compares the enums.

use std::fmt;
use std::str::FromStr;

/// A state or stage name that is not one of the allowed ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?} (allowed: {allowed})")]
pub struct UnknownName {
    pub what: &'static str,
    pub value: String,
    pub allowed: String,
}

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in lifecycle order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName {
                        what: $what,
                        value: s.to_string(),
                        allowed: [$($text),+].join(", "),
                    }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum!(
    /// Where a job is: `queued → building → running → done`, or `failed` / `cancelled`.
    JobState, "job state", {
        Queued = "queued",
        Building = "building",
        Running = "running",
        Done = "done",
        Failed = "failed",
        Cancelled = "cancelled",
    }
);

impl JobState {
    /// Whether the job has ended (nothing more will run).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

named_enum!(
    /// What a host is to the coordinator: a database host (agent) or a client host (worker).
    HostRole, "host role", {
        Agent = "agent",
        Worker = "worker",
    }
);

named_enum!(
    /// A worker step of a TPC-C-like or AS3AP-like workload outside the measured window
    /// (TPC-C-like: schema, load, finish, check; AS3AP-like: load, single-user).
    WorkloadStep, "workload step", {
        Schema = "schema",
        Load = "load",
        Finish = "finish",
        Check = "check",
        SingleUser = "single-user",
    }
);

named_enum!(
    /// What a job is: a benchmark (the matrix of page sizes) or an I/O probe.
    JobKind, "job kind", {
        Benchmark = "benchmark",
        Probe = "probe",
    }
);

named_enum!(
    /// The name of a workload kind, as `workload.kind` and the wire's `WorkloadKind.kind`
    /// spell it.
    WorkloadName, "workload kind", {
        Pgbench = "pgbench",
        Tpcc = "tpcc",
        As3ap = "as3ap",
        Maintenance = "maintenance",
    }
);

named_enum!(
    /// Where a run is. `lost`: its host went silent; the run is retried.
    RunState, "run state", {
        Queued = "queued",
        Running = "running",
        Done = "done",
        Failed = "failed",
        Cancelled = "cancelled",
        Lost = "lost",
    }
);

impl RunState {
    /// Whether the run has ended and will not be retried.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunState::Done | RunState::Failed | RunState::Cancelled
        )
    }
}

named_enum!(
    /// The step a run is at (or failed at), as the coordinator records it and the hosts report
    /// it in their progress and errors.
    Stage, "stage", {
        Queued = "queued",
        Building = "building",
        Starting = "starting",
        LoadingData = "loading-data",
        WarmingUp = "warming-up",
        /// A worker has connected all its clients and waits for the go.
        Ready = "ready",
        Measuring = "measuring",
        /// AS3AP-like single-user queries.
        SingleUser = "single-user",
        /// Maintenance timings on the agent.
        Maintenance = "maintenance",
        /// An I/O probe on the agent.
        Probing = "probing",
        /// TPC-C-like consistency conditions after a window.
        Checking = "checking",
        Collecting = "collecting",
        /// The agent stops the run's server.
        Stopping = "stopping",
        Done = "done",
        Cancelled = "cancelled",
    }
);

named_enum!(
    /// The step a PostgreSQL build is at, as the agent reports it while it builds.
    BuildStep, "build step", {
        /// Fetching (download, clone) and unpacking the source.
        Fetch = "fetch",
        Configure = "configure",
        Make = "make",
        Install = "install",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for s in Stage::ALL {
            assert_eq!(s.as_str().parse::<Stage>(), Ok(*s));
        }
        for s in RunState::ALL {
            assert_eq!(s.as_str().parse::<RunState>(), Ok(*s));
        }
        for s in JobState::ALL {
            assert_eq!(s.as_str().parse::<JobState>(), Ok(*s));
        }
        for s in BuildStep::ALL {
            assert_eq!(s.as_str().parse::<BuildStep>(), Ok(*s));
        }
        let e = "measure".parse::<Stage>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown stage \"measure\" (allowed: queued, building, starting, loading-data, \
             warming-up, ready, measuring, single-user, maintenance, probing, checking, \
             collecting, stopping, done, cancelled)"
        );
        assert_eq!(
            serde_json::to_string(&Stage::LoadingData).unwrap(),
            "\"loading-data\""
        );
    }
}
