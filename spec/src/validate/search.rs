//! `search = "race"`: what a race needs of the rest of the spec.

use crate::error::SpecError;
use crate::model::{Adaptive, RunOrder, Search, Spec};
use crate::raw::RawMatrix;

/// What of the spec a race depends on.
pub(super) struct Parts<'a> {
    pub search: Option<&'a str>,
    pub matrix: &'a RawMatrix,
    pub sources: usize,
    pub workload_variants: usize,
    pub adaptive: Option<&'a Adaptive>,
    pub order: RunOrder,
}

/// The fewest cells a race is run over.
pub const MIN_RACE_CELLS: usize = 3;

/// `search`: "grid" (the default) or "race"; a race needs adaptive repetitions until
/// decided, rounds as blocks, one source, one workload, one client count and scale (and at
/// least [`MIN_RACE_CELLS`] cells, [`enough_cells`]).
pub(super) fn search(p: Parts<'_>) -> Result<Search, SpecError> {
    match p.search {
        None | Some("grid") => return Ok(Search::Grid),
        Some("race") => {}
        Some(other) => {
            return Err(SpecError::new(
                "search",
                format!(
                    "{other:?} is not allowed; use \"grid\" (every cell every round) or \"race\""
                ),
            ));
        }
    }
    let refuse =
        |field: &str, why: &str| Err(SpecError::new(field, format!("search = \"race\" {why}")));
    if !p.adaptive.is_some_and(|a| a.until_decided) {
        return refuse(
            "repetitions",
            "adds rounds until the race is decided: give repetitions = { min = 3, max = 20, until = \"decided\" }",
        );
    }
    if !matches!(
        p.order,
        RunOrder::Interleaved | RunOrder::RandomizedBlock { .. }
    ) {
        return refuse(
            "order",
            "compares cells within rounds: use order = \"randomized-block\" or \"interleaved\"",
        );
    }
    if p.sources > 1 {
        return refuse("sources", "races the cells of one source; name one");
    }
    if p.workload_variants > 0 {
        return refuse(
            "workload_variants",
            "races the cells of one workload; remove the variants",
        );
    }
    if p.matrix.clients.len() > 1 {
        return refuse(
            "matrix.clients",
            "races the cells of one client count; give one",
        );
    }
    if p.matrix.scale.len() > 1 {
        return refuse("matrix.scale", "races the cells of one scale; give one");
    }
    if p.matrix.replicate_baseline {
        return refuse(
            "matrix.replicate_baseline",
            "keeps the default cell to the end; an A/A replicate of it has no place in the race",
        );
    }
    Ok(Search::Race)
}

/// A race's matrix has at least [`MIN_RACE_CELLS`] cells (as planned: one axis at a time
/// from the baseline unless `vary = "all"`).
pub(super) fn enough_cells(spec: &Spec) -> Result<(), SpecError> {
    let cells = crate::baselines::cells(spec).len();
    if spec.search == Search::Race && cells < MIN_RACE_CELLS {
        return Err(SpecError::new(
            "matrix",
            format!(
                "search = \"race\" needs at least {MIN_RACE_CELLS} cells (this matrix has {cells}); compare two cells with until = \"decided\""
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::{Search, Spec};

    const RACE: &str = "name = \"race\"\nsearch = \"race\"\nrepetitions = { min = 3, max = 10, until = \"decided\" }\norder = \"randomized-block\"\nseed = 7\n";
    const REST: &str = "[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nvary = \"all\"\nblock_size_kb = [8, 16]\nwal_block_size_kb = [4, 8, 16]\nclients = [4]\n[workload]\nduration = \"5s\"\n";

    #[test]
    fn a_race_over_a_page_size_grid() {
        let s = Spec::parse(&format!("{RACE}{REST}")).expect("valid race");
        assert_eq!(s.search, Search::Race);
        // The minimum of rounds is planned for every cell.
        assert_eq!(s.plan().runs.len(), 6 * 3);
        let grid = Spec::parse(&format!("name = \"g\"\nrepetitions = 2\n{REST}")).expect("grid");
        assert_eq!(grid.search, Search::Grid);
    }

    #[test]
    fn a_plan_stored_before_the_search_option_reads_as_a_grid() {
        let s = Spec::parse(&format!("{RACE}{REST}")).expect("valid race");
        let mut v = serde_json::to_value(&s).expect("json");
        v.as_object_mut().expect("object").remove("search");
        let old: Spec = serde_json::from_value(v).expect("old spec");
        assert_eq!(old.search, Search::Grid);
    }

    #[test]
    fn what_a_race_refuses_names_the_field() {
        let fixed = RACE.replace(
            "repetitions = { min = 3, max = 10, until = \"decided\" }",
            "repetitions = 3",
        );
        let sequential = RACE.replace("order = \"randomized-block\"", "order = \"sequential\"");
        let two_cells = REST.replace("wal_block_size_kb = [4, 8, 16]", "wal_block_size_kb = [8]");
        let ladder = REST.replace("clients = [4]", "clients = [1, 4]");
        let aa = REST.replace("clients = [4]", "clients = [4]\nreplicate_baseline = true");
        for (text, field, says) in [
            (
                format!("{RACE}{REST}").replace("\"race\"", "\"fastest\""),
                "search",
                "\"fastest\" is not allowed",
            ),
            (
                format!("{fixed}{REST}"),
                "repetitions",
                "until = \\\"decided\\\"",
            ),
            (format!("{sequential}{REST}"), "order", "randomized-block"),
            (
                format!("{RACE}{two_cells}"),
                "matrix",
                "at least 3 cells (this matrix has 2)",
            ),
            (
                format!("{RACE}{ladder}"),
                "matrix.clients",
                "one client count",
            ),
            (
                format!("{RACE}{aa}"),
                "matrix.replicate_baseline",
                "A/A replicate",
            ),
        ] {
            let e = Spec::parse(&text).expect_err(field);
            assert_eq!(e.field, field, "{e}");
            assert!(
                format!("{e:?}").contains(says) || e.to_string().contains(says),
                "{e}"
            );
        }
    }
}
