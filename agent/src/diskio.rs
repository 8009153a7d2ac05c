//! Bytes written to the block devices under a cluster's data and WAL directories, from the
//! kernel's per-device counters (`/sys/dev/block/MAJOR:MINOR/stat`, sectors written x 512):
//! a window's delta is what the disk was asked to write while it ran, WAL and data pages
//! alike, as `iostat` reports it. A directory on a filesystem without a block device (tmpfs,
//! overlay) contributes nothing; a device shared by both directories is counted once.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// Sectors as the kernel counts them in `stat`, whatever the device's own sector size.
const SECTOR_BYTES: u64 = 512;

/// The block device (major, minor) a path's filesystem lives on, if it has one.
fn device_of(path: &Path) -> Option<(u32, u32)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    // Major 0: an anonymous device (tmpfs, overlay, proc), no block device behind it.
    (major != 0).then_some((major, minor))
}

/// Bytes written so far to the device (major, minor): field 7 of its `stat` file.
fn written(device: (u32, u32)) -> Option<u64> {
    let text =
        std::fs::read_to_string(format!("/sys/dev/block/{}:{}/stat", device.0, device.1)).ok()?;
    parse_sectors_written(&text).map(|s| s * SECTOR_BYTES)
}

fn parse_sectors_written(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(6)?.parse().ok()
}

/// Bytes written so far to the distinct block devices under `dirs`, or `None` when none of
/// them is on a block device.
pub fn bytes_written(dirs: &[&Path]) -> Option<u64> {
    let mut devices: Vec<(u32, u32)> = dirs.iter().filter_map(|d| device_of(d)).collect();
    devices.sort_unstable();
    devices.dedup();
    let counts: Vec<u64> = devices.into_iter().filter_map(written).collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sectors_written_field_of_a_device_stat() {
        // /sys/block/vda/stat: reads, merged, sectors, ms, writes, merged, sectors, ms, ...
        let stat = "  123911     4710 10467470    56874   401337   258941 25683360   520144        0   373216   617120        0        0        0        0    26810    40101\n";
        assert_eq!(parse_sectors_written(stat), Some(25_683_360));
        assert_eq!(parse_sectors_written("1 2 3"), None);
    }

    #[test]
    fn a_directory_on_a_block_device_has_a_counter_that_grows_with_writes() {
        // The source tree is on a disk (a temp directory may be tmpfs, with no device).
        let tmp = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let before = bytes_written(&[&dir, &dir]).expect("the source tree is on a block device");
        let path = dir.join(format!("diskio-{}", std::process::id()));
        {
            use std::io::Write as _;
            let mut f = std::fs::File::create(&path).expect("create");
            f.write_all(&vec![7u8; 4 << 20]).expect("write");
            f.sync_all().expect("fsync");
        }
        let after = bytes_written(&[&dir]).expect("still a block device");
        std::fs::remove_file(&path).expect("remove");
        assert!(
            after >= before + (4 << 20),
            "4 MiB written and synced: {before} -> {after}"
        );
    }
}
