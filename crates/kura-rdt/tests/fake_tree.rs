//! kura-rdt against a resctrl tree laid out in a temporary directory: detection,
//! info/L3, groups, schemata (checked before writing; a refused write reports
//! info/last_cmd_status), tasks, occupancy, the lock, cleanup on drop and of groups
//! a crashed process left behind.

use std::fs;
use std::path::Path;
use std::time::Duration;

use kura_rdt::{detect, Detection, RdtError, Resctrl};

/// A resctrl mount as the kernel lays it out: 11 ways, two L3 domains.
fn fake_resctrl(root: &Path) {
    let l3 = root.join("info/L3");
    fs::create_dir_all(&l3).unwrap();
    for (name, value) in [
        ("cbm_mask", "7ff"),
        ("min_cbm_bits", "2"),
        ("num_closids", "16"),
        ("shareable_bits", "600"),
    ] {
        fs::write(l3.join(name), format!("{value}\n")).unwrap();
    }
    fs::write(root.join("info/last_cmd_status"), "ok\n").unwrap();
    fs::write(
        root.join("schemata"),
        "    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n",
    )
    .unwrap();
    fs::write(root.join("tasks"), "").unwrap();
}

/// What the kernel creates inside a new group.
fn kernel_fills_group(dir: &Path) {
    fs::write(dir.join("schemata"), "").unwrap();
    fs::write(dir.join("tasks"), "").unwrap();
    for (domain, bytes) in [("mon_L3_00", "1048576"), ("mon_L3_01", "524288")] {
        fs::create_dir_all(dir.join("mon_data").join(domain)).unwrap();
        fs::write(
            dir.join("mon_data").join(domain).join("llc_occupancy"),
            format!("{bytes}\n"),
        )
        .unwrap();
    }
}

#[test]
fn detection_says_what_is_missing_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let absent = detect(dir.path()).summary();
    assert!(
        absent.contains("not mounted") && !absent.contains('\n'),
        "{absent}"
    );
    fs::create_dir_all(dir.path().join("info/MB")).unwrap();
    assert!(detect(dir.path())
        .summary()
        .contains("no L3 cache allocation"));
    fake_resctrl(dir.path());
    let Detection::Available(info) = detect(dir.path()) else {
        panic!("expected resctrl")
    };
    assert_eq!(
        (
            info.cbm_mask,
            info.min_cbm_bits,
            info.num_closids,
            info.shareable_bits
        ),
        (0x7ff, 2, 16, 0x600)
    );
    assert!(detect(dir.path()).summary().contains("11 ways"));
    fs::write(dir.path().join("info/L3/cbm_mask"), "zz\n").unwrap();
    assert!(detect(dir.path()).summary().contains("unusable"));
    assert!(matches!(
        Resctrl::open(dir.path()),
        Err(RdtError::Unavailable(_))
    ));
    // this machine: a one-line answer either way
    let here = detect(Path::new(kura_rdt::DEFAULT_ROOT)).summary();
    assert_eq!(here.lines().count(), 1, "{here}");
}

#[test]
fn groups_schemata_tasks_and_occupancy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_resctrl(root);
    let mut rdt = Resctrl::open(root).unwrap();
    assert_eq!(rdt.domains().unwrap(), vec![0, 1]);
    let scan = rdt.create_group("scan").unwrap();
    assert!(scan
        .name()
        .starts_with(&format!("kura-{}-", std::process::id())));
    kernel_fills_group(scan.path());

    rdt.write_schemata(&scan, 0x003).unwrap();
    assert_eq!(
        fs::read_to_string(scan.path().join("schemata")).unwrap(),
        "L3:0=3;1=3\n"
    );
    assert_eq!(rdt.read_schemata(&scan).unwrap(), vec![(0, 3), (1, 3)]);
    // rejected before anything is written
    for bad in [0x005, 0x001, 0x800, 0] {
        assert!(
            matches!(
                rdt.write_schemata(&scan, bad),
                Err(RdtError::InvalidMask { .. })
            ),
            "{bad:#x}"
        );
    }
    assert_eq!(
        fs::read_to_string(scan.path().join("schemata")).unwrap(),
        "L3:0=3;1=3\n"
    );

    rdt.add_task(&scan, 4242).unwrap();
    rdt.add_task(&scan, 4243).unwrap();
    assert_eq!(rdt.tasks(&scan).unwrap(), vec![4242, 4243]);
    rdt.remove_task(4242).unwrap();
    assert_eq!(fs::read_to_string(root.join("tasks")).unwrap(), "4242\n");

    assert_eq!(
        rdt.llc_occupancy(&scan).unwrap(),
        vec![
            ("mon_L3_00".to_string(), 1 << 20),
            ("mon_L3_01".to_string(), 1 << 19)
        ]
    );
    assert!(rdt.create_group("bad name!").is_err());
    rdt.remove_group(&scan).unwrap();
    assert!(!scan.path().exists() && rdt.groups().is_empty());
}

#[test]
fn a_refused_write_reports_last_cmd_status() {
    let dir = tempfile::tempdir().unwrap();
    fake_resctrl(dir.path());
    let mut rdt = Resctrl::open(dir.path()).unwrap();
    let g = rdt.create_group("sensitive").unwrap();
    // the kernel refuses with EINVAL and explains in last_cmd_status; a directory
    // in place of the file makes the write fail the same way here
    fs::create_dir(g.path().join("schemata")).unwrap();
    fs::write(
        dir.path().join("info/last_cmd_status"),
        "Mask overlaps with exclusive group\n",
    )
    .unwrap();
    let err = rdt.write_schemata(&g, 0x00f).unwrap_err().to_string();
    assert!(
        err.contains("Mask overlaps with exclusive group") && err.contains("refused"),
        "{err}"
    );
    // unreadable pieces are errors, not panics
    assert!(rdt.tasks(&g).is_err());
    assert!(rdt.llc_occupancy(&g).is_err());
    fs::write(dir.path().join("schemata"), "MB:0=100\n").unwrap();
    assert!(matches!(rdt.domains(), Err(RdtError::Parse { .. })));
}

#[test]
fn groups_are_removed_on_drop_and_stale_ones_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_resctrl(root);
    let path = {
        let mut rdt = Resctrl::open(root).unwrap();
        let g = rdt.create_group("probe").unwrap();
        kernel_fills_group(g.path());
        g.path().to_path_buf()
    };
    assert!(!path.exists(), "dropping the handle removes its groups");

    // A crashed kura (a pid that cannot exist) left a group; a foreign group stays.
    let stale = root.join("kura-999999999-scan");
    fs::create_dir(&stale).unwrap();
    kernel_fills_group(&stale);
    fs::create_dir(root.join("other-tool")).unwrap();
    let rdt = Resctrl::open(root).unwrap();
    assert_eq!(rdt.stale_removed(), ["kura-999999999-scan".to_string()]);
    assert!(!stale.exists() && root.join("other-tool").exists());
}

#[test]
fn the_root_lock_serialises_handles() {
    let dir = tempfile::tempdir().unwrap();
    fake_resctrl(dir.path());
    let first = Resctrl::open(dir.path()).unwrap();
    let second = Resctrl::open_with_timeout(dir.path(), Duration::from_millis(50));
    assert!(matches!(second, Err(RdtError::Busy(_))));
    drop(first);
    assert!(Resctrl::open_with_timeout(dir.path(), Duration::from_millis(50)).is_ok());
}

#[test]
fn a_partition_warms_protects_releases_and_leaves_nothing_behind() {
    use kura_rdt::{measure_switch, Class, Partition};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fake_resctrl(root);
    let default_schemata = fs::read_to_string(root.join("schemata")).unwrap();
    let sensitive_path;
    {
        let rdt = Resctrl::open(root).unwrap();
        // the kernel would create the control files; here the write creates them
        let mut p = Partition::new(rdt, 2).unwrap();
        sensitive_path = p.group(Class::Sensitive).path().to_path_buf();
        let read = |c: Class| p.resctrl().read_schemata(p.group(c)).unwrap();
        assert_eq!(read(Class::Sensitive), vec![(0, 0x7ff), (1, 0x7ff)]);
        assert_eq!(read(Class::Streaming), vec![(0, 0x3), (1, 0x3)]);

        // warm a 3 MiB object in an 11 MiB LLC: it gets the top 3 ways
        let masks = p.begin_warm(777, 3 << 20, 11 << 20).unwrap();
        assert_eq!((masks.protected, masks.others), (0x700, 0x0ff));
        let protect = root.join(format!("kura-{}-protect", std::process::id()));
        assert_eq!(fs::read_to_string(protect.join("tasks")).unwrap(), "777\n");
        p.protect(&[777, 778]).unwrap();
        let read = |c: Class| p.resctrl().read_schemata(p.group(c)).unwrap();
        assert_eq!(read(Class::Sensitive), vec![(0, 0x0ff), (1, 0x0ff)]);
        assert_eq!(read(Class::Streaming), vec![(0, 0x3), (1, 0x3)]);
        assert_eq!(
            fs::read_to_string(sensitive_path.join("tasks")).unwrap(),
            "777\n778\n"
        );
        // an object too big to protect is refused before anything is written
        assert!(p.begin_warm(777, 10 << 20, 11 << 20).is_err());

        p.release().unwrap();
        assert!(!protect.exists() && p.protected().is_none());
        let read = |c: Class| p.resctrl().read_schemata(p.group(c)).unwrap();
        assert_eq!(read(Class::Sensitive), vec![(0, 0x7ff), (1, 0x7ff)]);
        // protect without warming first is an error, not a panic
        assert!(p.protect(&[1]).is_err());

        let per_write = measure_switch(&p, 10).unwrap();
        assert!(per_write.as_nanos() > 0);
        let tasks = fs::read_to_string(p.group(Class::Streaming).path().join("tasks")).unwrap();
        assert_eq!(tasks.lines().count(), 10);
    }
    assert!(!sensitive_path.exists(), "groups are removed on drop");
    let left: Vec<_> = fs::read_dir(root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kura-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        fs::read_to_string(root.join("schemata")).unwrap(),
        default_schemata,
        "the default group's schemata is never changed"
    );
}

#[test]
fn a_refused_task_move_reports_last_cmd_status() {
    let dir = tempfile::tempdir().unwrap();
    fake_resctrl(dir.path());
    let mut rdt = Resctrl::open(dir.path()).unwrap();
    let g = rdt.create_group("streaming").unwrap();
    fs::create_dir(g.path().join("tasks")).unwrap();
    fs::write(dir.path().join("info/last_cmd_status"), "No task 4242\n").unwrap();
    let err = rdt.add_task(&g, 4242).unwrap_err().to_string();
    assert!(err.contains("No task 4242"), "{err}");
}
