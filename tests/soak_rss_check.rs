//! The soak's leak check (`testkit::rss`, testkit/src/rss.rs) on hand-made RSS series: which samples it
//! compares when leaders change, and when it fails. Pure: no cluster.

use testkit::rss::{Leak, RssSample};

/// Samples every 10 s from `from` to `to` (exclusive) with `pid` leading at `mib(t)`.
fn led(pid: u32, from: u32, to: u32, mib: impl Fn(f64) -> f64) -> Vec<RssSample> {
    (from..to)
        .step_by(10)
        .map(|t| {
            let t = f64::from(t);
            RssSample {
                t,
                leader_mib: Some(mib(t)),
                standby_mib: Some(40.0),
                leader_pid: Some(pid),
                standby_pid: Some(pid + 1000),
            }
        })
        .collect()
}

#[test]
fn one_leader_throughout_is_checked_both_ways() {
    let samples = led(1, 0, 1800, |_| 70.0);
    let leak = Leak::of(&samples, 300.0, 0.10).unwrap();
    assert!(leak.same_process && leak.within_tolerance);
    let longest = leak.longest_leading.as_ref().unwrap();
    assert_eq!(
        (longest.pid, longest.base_secs, longest.last_secs),
        (1, 300.0, 1790.0)
    );
    assert!(leak.held());
}

#[test]
fn a_leader_that_grows_fails() {
    // 60 MiB at 300 s, +1 MiB a minute: 75 MiB at the end (ratio 1.25).
    let samples = led(1, 0, 1200, |t| 55.0 + t / 60.0);
    let leak = Leak::of(&samples, 300.0, 0.10).unwrap();
    assert!(!leak.within_tolerance);
    assert!(!leak.longest_leading.as_ref().unwrap().within_tolerance);
    assert!(!leak.held());
}

#[test]
fn after_a_leader_change_the_longest_leadership_counts_from_its_own_base() {
    // pid 1 leads 0-280 s; pid 2 is promoted at 290 s and climbs 40 -> 70 MiB over its first 200 s, then holds.
    let mut samples = led(1, 0, 290, |_| 70.0);
    samples.extend(led(2, 290, 1800, |t| (40.0 + (t - 290.0) * 0.15).min(70.0)));
    let leak = Leak::of(&samples, 300.0, 0.10).unwrap();
    // The two samples: pid 2 just promoted (41.5 MiB) and pid 2 settled (70): a promotion, not a leak.
    assert!(leak.same_process && !leak.within_tolerance);
    let longest = leak.longest_leading.as_ref().unwrap();
    assert_eq!(
        (longest.pid, longest.led_from_secs, longest.base_secs),
        (2, 290.0, 590.0)
    );
    assert!(longest.within_tolerance, "{longest:?}");
    assert!(leak.held());
    // The same promotion followed by growth fails.
    let mut samples = led(1, 0, 290, |_| 70.0);
    samples.extend(led(2, 290, 1800, |t| {
        (40.0 + (t - 290.0) * 0.15).min(70.0) + (t - 290.0) / 120.0
    }));
    assert!(!Leak::of(&samples, 300.0, 0.10).unwrap().held());
}

#[test]
fn two_processes_at_the_ends_do_not_count_the_longest_leadership_does() {
    // pid 1 leads 0-1200 s and holds 70 MiB; pid 2 takes over at 1210 s and is at 45 MiB at the end.
    let mut samples = led(1, 0, 1210, |_| 70.0);
    samples.extend(led(2, 1210, 1400, |_| 45.0));
    let leak = Leak::of(&samples, 300.0, 0.10).unwrap();
    assert!(!leak.same_process && !leak.within_tolerance);
    assert_eq!(leak.longest_leading.as_ref().unwrap().pid, 1);
    assert!(leak.held());
    // ... unless the longest leadership itself grew.
    let mut samples = led(1, 0, 1210, |t| 55.0 + t / 60.0);
    samples.extend(led(2, 1210, 1400, |_| 45.0));
    assert!(!Leak::of(&samples, 300.0, 0.10).unwrap().held());
}

#[test]
fn an_election_gap_breaks_a_leadership_and_a_run_without_a_long_one_fails() {
    // Leaders change every 200 s, with a sample without a leader in between: none leads 300 s.
    let mut samples = Vec::new();
    for (i, from) in (0..1800).step_by(200).enumerate() {
        samples.extend(led(i as u32 + 1, from, from + 190, |_| 70.0));
        samples.push(RssSample {
            t: f64::from(from + 190),
            leader_mib: None,
            standby_mib: Some(40.0),
            leader_pid: None,
            standby_pid: Some(99),
        });
    }
    let leak = Leak::of(&samples, 300.0, 0.10).unwrap();
    assert!(leak.longest_leading.is_none());
    assert!(!leak.held(), "no leak check could be made: not a pass");
    // One pid leading twice, with a gap, is two leaderships of 190 s, not one of 390 s.
    let mut samples = led(7, 0, 200, |_| 70.0);
    samples.push(RssSample {
        t: 200.0,
        leader_mib: None,
        standby_mib: None,
        leader_pid: None,
        standby_pid: None,
    });
    samples.extend(led(7, 210, 400, |_| 70.0));
    assert!(
        Leak::of(&samples, 300.0, 0.10)
            .unwrap()
            .longest_leading
            .is_none()
    );
}

#[test]
fn a_run_shorter_than_the_base_sample_has_no_check() {
    assert!(Leak::of(&led(1, 0, 120, |_| 70.0), 300.0, 0.10).is_none());
}
