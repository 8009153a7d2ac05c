//! The log lines, field for field as pgbench 15 writes them.
use super::*;
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn rec(cnt: u64, outcome: TxOutcome, tries: u32) -> TxRecord {
    TxRecord {
        client: 3,
        cnt,
        outcome,
        script: 1,
        lag_us: 250.4,
        tries,
    }
}

#[test]
fn transaction_lines() {
    let plain = LogFields::default();
    let done = rec(7, TxOutcome::Done { latency_us: 1234.6 }, 1);
    assert_eq!(
        transaction_line(&done, 1_700_000_000_123_456, plain),
        "3 7 1235 1 1700000000 123456"
    );
    let all = LogFields {
        throttled: true,
        latency_limit: true,
        retries: true,
        failures_detailed: false,
    };
    assert_eq!(
        transaction_line(&rec(8, TxOutcome::Skipped, 1), 1_700_000_000_000_001, all),
        "3 8 skipped 1 1700000000 1 250 0"
    );
    assert_eq!(
        transaction_line(&rec(9, TxOutcome::Deadlock, 3), 1_700_000_000_000_001, all),
        "3 9 failed 1 1700000000 1 250 2"
    );
    let detailed = LogFields {
        failures_detailed: true,
        ..all
    };
    assert_eq!(
        transaction_line(&rec(9, TxOutcome::Serialization, 2), 5_000_000, detailed),
        "3 9 serialization 1 5 0 250 1"
    );
}

#[test]
fn aggregated_intervals() {
    let buf = Shared::default();
    let mut o = TxLogOptions::new(None);
    o.aggregate_interval_s = 2;
    let f = LogFields {
        throttled: true,
        latency_limit: true,
        retries: true,
        failures_detailed: true,
    };
    let mut log = ThreadLog::to_writer(Box::new(buf.clone()), &o, f, 10_400_000);
    let mut rng = PgPrng::seed(1);
    log.log(
        &rec(0, TxOutcome::Done { latency_us: 100.0 }, 1),
        10_500_000,
        &mut rng,
    );
    log.log(
        &rec(1, TxOutcome::Done { latency_us: 300.0 }, 2),
        11_000_000,
        &mut rng,
    );
    log.log(&rec(2, TxOutcome::Skipped, 1), 11_100_000, &mut rng);
    log.log(&rec(3, TxOutcome::Deadlock, 1), 11_200_000, &mut rng);
    // 16.5 s: the interval [10, 12) and the empty [12, 14) and [14, 16) are written.
    log.log(
        &rec(4, TxOutcome::Done { latency_us: 50.0 }, 1),
        16_500_000,
        &mut rng,
    );
    log.finish(17_000_000, &mut rng).unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        text,
        "10 2 400 100000 100 300 501 125400 250 250 1 1 1 0 1\n\
         12 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
         14 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    );
    for line in text.lines() {
        assert_eq!(line.split(' ').count(), 15, "{line}");
    }
}

#[test]
fn file_names_and_sampling() {
    let mut o = TxLogOptions::new(Some("/tmp/x".into()));
    o.pid = 42;
    assert_eq!(o.path(0), PathBuf::from("/tmp/x.42"));
    assert_eq!(o.path(3), PathBuf::from("/tmp/x.42.3"));
    o.sampling_rate = 0.25;
    let buf = Shared::default();
    let mut log = ThreadLog::to_writer(Box::new(buf.clone()), &o, LogFields::default(), 0);
    let mut rng = PgPrng::seed(7);
    for i in 0..4000 {
        log.log(&rec(i, TxOutcome::Done { latency_us: 1.0 }, 1), 1, &mut rng);
    }
    let n = buf
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    assert!((850..1150).contains(&n), "about a quarter logged: {n}");
}
