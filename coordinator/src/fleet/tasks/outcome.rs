//! Why a task gave no result, and which run attempt a task belongs to.

use blocklab_proto::v1::task_result::Outcome;
use blocklab_spec::Stage;

use crate::fleet::CallError;

/// Why a task gave no result.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The call did not complete: the host disconnected or did not answer in time, so the
    /// run it served may be retried.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The host reported a failure: the stage it names when this coordinator knows it, its
    /// reason and the log tail of what failed.
    #[error("{reason}")]
    Failed {
        stage: Option<Stage>,
        reason: String,
        log_tail: String,
    },
    /// The host answered with the result of another kind of task.
    #[error("host answered {task} with the wrong result kind")]
    WrongKind { task: &'static str },
}

impl TaskError {
    /// The host is gone or silent (the task itself did not fail).
    pub fn is_lost(&self) -> bool {
        matches!(self, TaskError::Call(_))
    }
}

pub(super) fn failure(task: &'static str, outcome: Outcome) -> TaskError {
    match outcome {
        Outcome::Error(e) => TaskError::Failed {
            stage: e.stage.parse().ok(),
            reason: e.reason,
            log_tail: e.log_tail,
        },
        _ => TaskError::WrongKind { task },
    }
}

/// The run attempt a task belongs to (`("", 0)` for tasks of no run: builds, checks).
#[derive(Debug, Clone, Copy)]
pub struct RunOf<'a> {
    pub run_id: &'a str,
    pub attempt: u32,
}

impl RunOf<'static> {
    pub const NONE: RunOf<'static> = RunOf {
        run_id: "",
        attempt: 0,
    };
}
