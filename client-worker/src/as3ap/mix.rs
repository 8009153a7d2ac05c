//! The two multi-user mixes: OSDB's `mu_ir_select` and `mu_oltp_update`.

use crate::error::WorkerError;

/// A multi-user mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    Ir,
    Oltp,
}

impl Mix {
    pub fn parse(s: &str) -> Result<Mix, WorkerError> {
        match s {
            "mixed-ir" => Ok(Mix::Ir),
            "mixed-oltp" => Ok(Mix::Oltp),
            other => Err(WorkerError::InvalidArgument(format!(
                "workload.as3ap.mix {other:?} is unknown; allowed: mixed-ir, mixed-oltp"
            ))),
        }
    }

    /// The name of its query class and metric prefix.
    pub fn class(self) -> &'static str {
        match self {
            Mix::Ir => "mixed_ir",
            Mix::Oltp => "mixed_oltp",
        }
    }

    pub(super) fn sql(self) -> &'static str {
        match self {
            Mix::Ir => {
                "select col_key, col_code, col_date, col_signed, col_name from updates where col_key = "
            }
            Mix::Oltp => "update updates set col_signed = col_signed + 1 where col_key = ",
        }
    }
}
