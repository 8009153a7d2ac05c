//! A submitted job as the coordinator keeps it: the validated spec and its expansion, parsed
//! from the spec text once at submit and stored in the catalog beside that text. The
//! scheduler, the listings and the reports read this, never the text.

use serde::{Deserialize, Serialize};

use crate::error::SpecError;
use crate::model::{JobSpec, Plan, ProbeSpec, Spec};
use crate::script::{Files, ScriptSource, UserFile};
use crate::state::JobKind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JobPlan {
    /// The matrix of page sizes: the spec and its cells and runs in run order.
    Benchmark { spec: Box<Spec>, plan: Plan },
    /// An I/O probe.
    Probe(ProbeSpec),
}

impl JobPlan {
    /// Parses and validates spec text of either kind and expands it (`seed` replays a
    /// shuffled order).
    pub fn parse(text: &str, seed: Option<u64>) -> Result<Self, SpecError> {
        Ok(Self::new(JobSpec::parse_with_seed(text, seed)?))
    }

    /// Like `parse`, with the files the spec names as sent beside it.
    pub fn parse_with(text: &str, seed: Option<u64>, files: &Files) -> Result<Self, SpecError> {
        Ok(Self::new(JobSpec::parse_with(text, seed, files)?))
    }

    /// Gives every workload with random streams (pgbench, TPC-C-like, AS3AP-like) that has
    /// no random seed `seed` (the job's one seed, chosen at submit when the spec names none);
    /// every run's streams derive from it.
    pub fn with_random_seed(mut self, seed: u64) -> Self {
        if let JobPlan::Benchmark { spec, .. } = &mut self {
            let workloads = std::iter::once(&mut spec.workload)
                .chain(spec.workload_variants.iter_mut().map(|(_, w)| w));
            for w in workloads {
                if w.kind.is_seeded() {
                    w.pgbench.random_seed.get_or_insert(seed);
                }
            }
        }
        self
    }

    /// The job's random seed: its workload's (none for maintenance jobs and probes).
    pub fn random_seed(&self) -> Option<u64> {
        match self {
            JobPlan::Benchmark { spec, .. } => spec.workload.pgbench.random_seed,
            JobPlan::Probe(_) => None,
        }
    }

    /// The user's files the job holds: (role, file), role `script` or `init-sql`, each
    /// (name, role) once.
    pub fn user_files(&self) -> Vec<(&'static str, &UserFile)> {
        let mut out: Vec<(&'static str, &UserFile)> = Vec::new();
        if let JobPlan::Benchmark { spec, .. } = self {
            let workloads = std::iter::once(&spec.workload)
                .chain(spec.workload_variants.iter().map(|(_, w)| w));
            for w in workloads {
                let scripts = w.pgbench.scripts.iter().filter_map(|s| match &s.source {
                    ScriptSource::File(f) => Some(("script", f)),
                    ScriptSource::Builtin(_) => None,
                });
                for (role, f) in scripts.chain(w.init.sql.iter().map(|f| ("init-sql", f))) {
                    if !out.iter().any(|(r, o)| *r == role && o.name == f.name) {
                        out.push((role, f));
                    }
                }
            }
        }
        out
    }

    pub fn new(spec: JobSpec) -> Self {
        match spec {
            JobSpec::Benchmark(spec) => {
                let plan = spec.plan();
                JobPlan::Benchmark { spec, plan }
            }
            JobSpec::Probe(p) => JobPlan::Probe(p),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            JobPlan::Benchmark { spec, .. } => &spec.name,
            JobPlan::Probe(p) => &p.name,
        }
    }

    pub fn kind(&self) -> JobKind {
        match self {
            JobPlan::Benchmark { .. } => JobKind::Benchmark,
            JobPlan::Probe(_) => JobKind::Probe,
        }
    }

    /// What the job runs, for listings: its workload kind, or "probe".
    pub fn workload(&self) -> &'static str {
        match self {
            JobPlan::Benchmark { spec, .. } => spec.workload.kind.name(),
            JobPlan::Probe(_) => JobKind::Probe.as_str(),
        }
    }

    /// The metric its results show when none is asked for.
    pub fn headline_metric(&self) -> &'static str {
        match self {
            JobPlan::Benchmark { spec, .. } => spec.workload.kind.headline_metric(),
            JobPlan::Probe(_) => "",
        }
    }

    /// (cells, runs) the job has.
    pub fn size(&self) -> (usize, usize) {
        match self {
            JobPlan::Benchmark { plan, .. } => (plan.cells.len(), plan.runs.len()),
            JobPlan::Probe(p) => (p.targets.len(), p.targets.len() * p.repetitions as usize),
        }
    }

    /// The stored form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan is plain data")
    }

    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_plan_reads_back_equal() {
        let text = "name = \"t\"\nrepetitions = 2\norder = \"shuffled\"\n\n[source]\ntarball = \"/x.tar.bz2\"\n\n[matrix]\nblock_size_kb = [8, 16]\nclients = [1]\n\n[workload]\nduration = \"5s\"\n";
        let plan = JobPlan::parse(text, None).expect("valid");
        let back = JobPlan::from_json(&plan.to_json()).expect("reads back");
        assert_eq!(back, plan);
        assert_eq!(back.kind(), JobKind::Benchmark);
        assert_eq!(back.workload(), "pgbench");
        assert_eq!(back.headline_metric(), "tps");
        assert_eq!(back.size(), (2, 4));
    }

    #[test]
    fn seeded_kinds_take_the_job_seed_and_maintenance_none() {
        let head = "name = \"t\"\n[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nclients = [1]\n[workload]\n";
        for (kind, seeded) in [
            ("pgbench", true),
            ("tpcc", true),
            ("as3ap", true),
            ("maintenance", false),
        ] {
            let text = format!("{head}kind = \"{kind}\"\nduration = \"5s\"\n");
            let plan = JobPlan::parse(&text, None)
                .expect("valid")
                .with_random_seed(42);
            assert_eq!(plan.random_seed(), seeded.then_some(42), "{kind}");
        }
    }
}
