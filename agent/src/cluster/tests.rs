use super::*;

#[test]
fn run_ids_are_checked() {
    for ok in ["r1", "job-3.run_7", "0f8fad5b-d9cb-469f-a165-70867728950e"] {
        validate_run_id(ok).unwrap();
    }
    for bad in ["", ".", "..", "a/b", "../x", "a b", &"x".repeat(129)] {
        assert!(validate_run_id(bad).is_err(), "{bad}");
    }
}

#[test]
fn password_is_32_alphanumerics_and_random() {
    let a = generate_password();
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a, generate_password());
}

#[test]
fn pick_port_skips_taken_and_bound_ports() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let held = TcpListener::bind((lo, 0)).unwrap();
    let p = held.local_addr().unwrap().port();
    // The bound port is skipped, and so is one we say is taken.
    let got = pick_port((p, p), lo, &HashSet::new());
    assert_eq!(got, None);
    drop(held);
    assert_eq!(pick_port((p, p), lo, &HashSet::new()), Some(p));
    assert_eq!(pick_port((p, p), lo, &HashSet::from([p])), None);
}
