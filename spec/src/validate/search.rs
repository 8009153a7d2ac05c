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
/// decided, rounds as blocks, one source and one workload (and at least [`MIN_RACE_CELLS`]
/// cells in each race, [`enough_cells`]). Cells that share a default race together: each
/// client count (or scale) is a race of its own.
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
    if p.matrix.replicate_baseline {
        return refuse(
            "matrix.replicate_baseline",
            "keeps the default cell to the end; an A/A replicate of it has no place in the race",
        );
    }
    Ok(Search::Race)
}

/// Each race of a job (the cells sharing a default: the root of their baseline chain) has at
/// least [`MIN_RACE_CELLS`] cells (as planned: one axis at a time from the baseline unless
/// `vary = "all"`).
pub(super) fn enough_cells(spec: &Spec) -> Result<(), SpecError> {
    if spec.search != Search::Race {
        return Ok(());
    }
    let cells = crate::baselines::cells(spec);
    let root = |mut at: u32| {
        for _ in 0..cells.len() {
            match cells.get(at as usize).and_then(|c| c.baseline_cell) {
                Some(b) if b != at => at = b,
                _ => break,
            }
        }
        at
    };
    let mut sizes: Vec<(u32, usize)> = Vec::new();
    for c in &cells {
        let r = root(c.index);
        match sizes.iter_mut().find(|(k, _)| *k == r) {
            Some((_, n)) => *n += 1,
            None => sizes.push((r, 1)),
        }
    }
    if let Some((r, n)) = sizes.iter().find(|(_, n)| *n < MIN_RACE_CELLS) {
        let default = cells
            .get(*r as usize)
            .map(|c| c.label_in(spec))
            .unwrap_or_default();
        return Err(SpecError::new(
            "matrix",
            format!(
                "search = \"race\" needs at least {MIN_RACE_CELLS} cells in each race (the cells of default {default} are {n}); compare two cells with until = \"decided\""
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
        // A race per client count.
        let ladder = REST.replace("clients = [4]", "clients = [1, 4]");
        let s = Spec::parse(&format!("{RACE}{ladder}")).expect("a race per client count");
        assert_eq!(s.plan().cells.len(), 12);
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
                "at least 3 cells in each race (the cells of default bs=8K",
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
