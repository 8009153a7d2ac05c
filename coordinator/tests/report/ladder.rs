//! More jobs on the fixture's catalog for the history page and the scaling chart: a client
//! ladder (8K baseline and 16K at 1, 2, 4 and 8 clients) on db1, and on a second host with
//! another PostgreSQL version a page-size job and its rerun.

use blocklab_coordinator::catalog::{HostRecord, ServerRecord};

use super::fixture::{self, Fixture};

/// 8K: 1→2 and 2→4 clients roughly double, 4→8 stays within the noise: the knee is 4.
pub const LADDER_8K: [(u32, [f64; 3]); 4] = [
    (1, [1000.0, 1020.0, 980.0]),
    (2, [2000.0, 2040.0, 1960.0]),
    (4, [3900.0, 4000.0, 4100.0]),
    (8, [4050.0, 3950.0, 4120.0]),
];
/// 16K: every step gains: the knee is 8.
pub const LADDER_16K: [(u32, [f64; 3]); 4] = [
    (1, [1100.0, 1110.0, 1090.0]),
    (2, [2200.0, 2210.0, 2190.0]),
    (4, [4000.0, 4010.0, 3990.0]),
    (8, [5000.0, 5010.0, 4990.0]),
];

pub struct Ladder {
    pub f: Fixture,
    pub ladder: String,
    pub original: String,
    pub rerun: String,
}

/// Cells: (block size KB, clients, is baseline, tps per repetition).
type Cell = (u32, u32, bool, [f64; 3]);

async fn job(
    f: &Fixture,
    name: &str,
    host: &str,
    version: &str,
    workload: &str,
    rerun_of: Option<&str>,
    cells: &[Cell],
) -> String {
    let job_id = uuid::Uuid::new_v4().to_string();
    let spec = format!("name = \"{name}\"\nrepetitions = 3\n");
    sqlx::query("INSERT INTO jobs (job_id, name, spec_toml, state, run_order, created_at, workload, headline_metric, rerun_of) VALUES ($1, $2, $3, 'queued', 'interleaved', '2026-02-01T00:00:00.000Z', $4, 'tps', $5)")
        .bind(&job_id).bind(name).bind(&spec).bind(workload).bind(rerun_of)
        .execute(&f.sql).await.expect("job");
    for (i, (bs, clients, base, _)) in cells.iter().enumerate() {
        sqlx::query("INSERT INTO cells (job_id, cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline, dims_json) VALUES ($1, $2, $3, $4, 8, $5, $6, '{}')")
            .bind(&job_id).bind(i as i64).bind(format!("bs={bs}K wal=8K c={clients}"))
            .bind(i64::from(*bs)).bind(i64::from(*clients)).bind(i64::from(*base))
            .execute(&f.sql).await.expect("cell");
    }
    let n = cells.len();
    for rep in 0..3usize {
        for (i, (bs, _, _, tps)) in cells.iter().enumerate() {
            let run_id = uuid::Uuid::new_v4().to_string();
            sqlx::query("INSERT INTO runs (run_id, job_id, cell_index, repetition, sequence, state, stage) VALUES ($1, $2, $3, $4, $5, 'queued', 'queued')")
                .bind(&run_id).bind(&job_id).bind(i as i64).bind(rep as i64).bind((rep * n + i) as i64)
                .execute(&f.sql).await.expect("run");
            let attempt = f
                .catalog
                .begin_attempt(&run_id, host, "w1")
                .await
                .expect("attempt");
            let server = ServerRecord {
                build_key: format!("pg{version}-bs{bs}-wal8"),
                build_reused: true,
                server_version: version.into(),
                block_size: bs * 1024,
                wal_block_size: 8192,
                server_address: "127.0.0.1:54321".into(),
                settings: Vec::new(),
            };
            f.catalog
                .record_server(&run_id, attempt, &server)
                .await
                .expect("server");
            let result = fixture::measured(tps[rep]);
            assert!(
                f.catalog
                    .finish_run(&run_id, attempt, &result)
                    .await
                    .expect("finish")
            );
        }
    }
    f.catalog.pin_job_host(&job_id, host).await.expect("pin");
    for state in [
        blocklab_spec::JobState::Running,
        blocklab_spec::JobState::Done,
    ] {
        f.catalog
            .set_job_state(&job_id, state, None)
            .await
            .expect("state");
    }
    job_id
}

pub async fn build() -> Ladder {
    let f = fixture::build().await;
    f.catalog
        .upsert_host(&HostRecord {
            host_id: "db2".into(),
            role: blocklab_spec::HostRole::Agent,
            labels: vec!["sata".into()],
            address: "127.0.0.2".into(),
            version: "0.1.0".into(),
            facts_json: r#"{"cpu_model":"Other CPU 100"}"#.into(),
            last_seen: String::new(),
        })
        .await
        .expect("db2");
    let mut cells: Vec<Cell> = Vec::new();
    for (bs, ladder, base) in [(8, LADDER_8K, true), (16, LADDER_16K, false)] {
        for (c, tps) in ladder {
            cells.push((bs, c, base, tps));
        }
    }
    let ladder = job(&f, "ladder", "db1", "15.18", "select-only", None, &cells).await;
    let sizes: [Cell; 2] = [
        (8, 4, true, [1000.0, 1010.0, 990.0]),
        (16, 4, false, [1150.0, 1160.0, 1140.0]),
    ];
    let original = job(&f, "on-db2", "db2", "16.4", "tpcb-like", None, &sizes).await;
    let rerun = job(
        &f,
        "on-db2-rerun",
        "db2",
        "16.4",
        "tpcb-like",
        Some(&original),
        &sizes,
    )
    .await;
    Ladder {
        f,
        ladder,
        original,
        rerun,
    }
}
