//! Job ids as people type them: the full id, or a unique prefix of at least 4 characters (as
//! git and docker take), resolved through `ListJobs`.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobSummary, ListJobsRequest};

use crate::client::{CliError, Transport, answer};

/// The fewest hex digits a prefix must give.
pub const MIN_PREFIX: usize = 4;

/// Whether `s` is a whole job id: a UUID in its hyphenated form.
fn is_full_id(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// What a given id asks for: a whole id (used as it is) or a prefix to look up.
fn parse(given: &str) -> Result<Given, CliError> {
    let id = given.trim().to_ascii_lowercase();
    if is_full_id(&id) {
        return Ok(Given::Full(id));
    }
    let hex = id.chars().filter(char::is_ascii_hexdigit).count();
    let shape = id.len() < 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if !shape || hex < MIN_PREFIX {
        return Err(CliError::NotAJobId {
            given: given.to_string(),
        });
    }
    Ok(Given::Prefix(id))
}

enum Given {
    Full(String),
    Prefix(String),
}

/// The one job of `jobs` whose id starts with `prefix` (lower case); none or several is an
/// error that says what to do (several are listed with their name, state and creation time).
pub fn match_prefix(prefix: &str, jobs: &[JobSummary]) -> Result<String, CliError> {
    let found: Vec<&JobSummary> = jobs
        .iter()
        .filter(|j| j.job_id.starts_with(prefix))
        .collect();
    match found.as_slice() {
        [] => Err(CliError::NoSuchJob {
            prefix: prefix.to_string(),
        }),
        [one] => Ok(one.job_id.clone()),
        several => Err(CliError::AmbiguousJob {
            prefix: prefix.to_string(),
            candidates: several
                .iter()
                .map(|j| {
                    format!(
                        "  {} {} ({}, created {})",
                        j.job_id, j.name, j.state, j.created_at
                    )
                })
                .collect(),
        }),
    }
}

/// The full ids of the jobs `given` names, in order: whole ids as they are, prefixes looked up
/// in one `ListJobs` (asked only when a prefix is given).
pub async fn resolve_job_ids<T: Transport, const N: usize>(
    client: &mut ControlClient<T>,
    given: [&str; N],
) -> Result<[String; N], CliError> {
    let parsed = given.map(parse);
    let mut jobs: Option<Vec<JobSummary>> = None;
    let mut out = [const { String::new() }; N];
    for (slot, p) in out.iter_mut().zip(parsed) {
        *slot = match p? {
            Given::Full(id) => id,
            Given::Prefix(prefix) => {
                if jobs.is_none() {
                    jobs = Some(answer(client.list_jobs(ListJobsRequest {}).await)?.jobs);
                }
                match_prefix(&prefix, jobs.as_deref().unwrap_or_default())?
            }
        };
    }
    Ok(out)
}

/// The full id of the job `given` names (see [`resolve_job_ids`]).
pub async fn resolve_job_id<T: Transport>(
    client: &mut ControlClient<T>,
    given: &str,
) -> Result<String, CliError> {
    let [id] = resolve_job_ids(client, [given]).await?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, name: &str) -> JobSummary {
        JobSummary {
            job_id: id.into(),
            name: name.into(),
            state: "done".into(),
            created_at: "2026-12-06 02:00:00".into(),
            ..Default::default()
        }
    }

    const A: &str = "09108b0e-5f1c-4c3a-9d2e-0123456789ab";
    const B: &str = "09108b77-0000-4000-8000-000000000000";
    const C: &str = "7a2b0000-0000-4000-8000-000000000000";

    #[test]
    fn a_unique_prefix_names_its_job() {
        let jobs = [job(A, "first"), job(B, "second"), job(C, "third")];
        assert_eq!(match_prefix("09108b0e", &jobs).unwrap(), A);
        assert_eq!(match_prefix("7a2b", &jobs).unwrap(), C);
        let Ok(Given::Prefix(p)) = parse("09108B0E") else {
            panic!("a prefix")
        };
        assert_eq!(p, "09108b0e", "case does not matter");
        let Ok(Given::Full(id)) = parse(A) else {
            panic!("a full id")
        };
        assert_eq!(id, A);
    }

    #[test]
    fn an_ambiguous_prefix_lists_the_candidates() {
        let jobs = [job(A, "first"), job(B, "second"), job(C, "third")];
        let e = match_prefix("0910", &jobs).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "0910 is the start of 2 jobs' ids; give more of the id:\n  \
                 {A} first (done, created 2026-12-06 02:00:00)\n  \
                 {B} second (done, created 2026-12-06 02:00:00)"
            )
        );
    }

    #[test]
    fn no_match_and_short_or_odd_ids_say_what_to_do() {
        let jobs = [job(A, "first")];
        assert_eq!(
            match_prefix("abcd", &jobs).unwrap_err().to_string(),
            "no job starts with abcd, see `blocklab jobs`"
        );
        for given in ["091", "my-job", "", "09108b0e-5f1c-4c3a-9d2e-0123456789ab0"] {
            let e = parse(given).err().expect(given).to_string();
            assert_eq!(
                e,
                format!(
                    "{given:?} is not a job id: give the job's id or at least its first 4 \
                     characters (see `blocklab jobs`)"
                )
            );
        }
    }
}
