//! A spec's plan: its cells (with what each is compared with) and its runs in order.

use crate::model::{Plan, PlannedRun, Spec};

impl Spec {
    /// Expands the matrix into cells and orders the runs.
    pub fn plan(&self) -> Plan {
        let cells = crate::baselines::cells(self);
        let runs = crate::order::runs(self.order, cells.len(), 0..self.repetitions, 0);
        Plan { cells, runs }
    }

    /// The runs of rounds `rounds` (one run of each cell each), numbered from `first_sequence`
    /// on: the rounds adaptive repetitions add after the planned ones.
    pub fn more_rounds(
        &self,
        plan: &Plan,
        rounds: std::ops::Range<u32>,
        first_sequence: u32,
    ) -> Vec<PlannedRun> {
        crate::order::runs(self.order, plan.cells.len(), rounds, first_sequence)
    }
}
