//! The I/O probe (the direct-I/O chunk-size test of the source material): sequential reads
//! of a test file at chunk sizes 4 KiB..8 MiB, buffered and with O_DIRECT, the file's pages
//! dropped from the page cache before every pass (fdatasync + POSIX_FADV_DONTNEED: works
//! without root and leaves other files' cache alone); then write+fdatasync latency at the
//! given block sizes. Blocking: run it on a blocking thread. MB/s is 10^6 bytes per second;
//! CPU is the probing thread's getrusage delta.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
use nix::sys::resource::{UsageWho, getrusage};

use crate::error::AgentError;

/// What a probe row measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProbeMode {
    /// Sequential reads through the page cache.
    #[default]
    ReadBuffered,
    /// Sequential reads with O_DIRECT.
    ReadDirect,
    /// write + fdatasync latency.
    WriteFdatasync,
}

impl ProbeMode {
    /// The mode's name in probe results (`read-direct`).
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeMode::ReadBuffered => "read-buffered",
            ProbeMode::ReadDirect => "read-direct",
            ProbeMode::WriteFdatasync => "write-fdatasync",
        }
    }
}
const ALIGN: usize = 4096;
const MIB: u64 = 1 << 20;
const DEFAULT_FILE_SIZE: u64 = 256 * MIB;
const DEFAULT_FSYNC_WRITES: u32 = 200;

/// A probe as a task asks for it (0 / empty = the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeRequest {
    pub file_size_bytes: u64,
    pub chunk_sizes: Vec<u32>,
    pub buffered: bool,
    pub direct: bool,
    pub fsync_block_sizes: Vec<u32>,
    pub fsync_writes: u32,
}

/// One measured pass: a read mode at a chunk size, or write+fdatasync at a block size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeRow {
    pub mode: ProbeMode,
    pub chunk_bytes: u32,
    pub mb_per_s: f64,
    pub user_cpu_s: f64,
    pub system_cpu_s: f64,
    pub latency_avg_us: f64,
    pub latency_p99_us: f64,
    pub cache_dropped: bool,
    pub bytes: u64,
}

/// Validated probe parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeParams {
    pub file_size: u64,
    pub chunk_sizes: Vec<u32>,
    pub buffered: bool,
    pub direct: bool,
    pub fsync_block_sizes: Vec<u32>,
    pub fsync_writes: u32,
}

/// What a probe produced. `skipped` explains rows that could not be measured (e.g. the
/// filesystem refuses O_DIRECT); such rows have `bytes == 0`.
#[derive(Clone, Debug, Default)]
pub struct ProbeOutcome {
    pub rows: Vec<ProbeRow>,
    pub skipped: Vec<String>,
}

/// Checks the task. Defaults: 256 MiB, chunks 4 KiB..8 MiB, both read modes (when neither
/// is asked for and no fsync test is either), 200 fsync writes.
pub fn params(t: &ProbeRequest) -> Result<ProbeParams, AgentError> {
    let file_size = match t.file_size_bytes {
        0 => DEFAULT_FILE_SIZE,
        n if !(MIB..=64 << 30).contains(&n) => {
            return Err(AgentError::invalid(
                "file_size_bytes",
                format!("{n} is not between 1 MiB and 64 GiB"),
            ));
        }
        n => n.div_ceil(MIB) * MIB,
    };
    let chunk_sizes: Vec<u32> = if t.chunk_sizes.is_empty() {
        (12..=23).map(|s| 1u32 << s).collect()
    } else {
        t.chunk_sizes.clone()
    };
    for c in &chunk_sizes {
        if !c.is_power_of_two() || !(4096..=8 << 20).contains(c) {
            return Err(AgentError::invalid(
                format!("chunk size {c}"),
                "must be a power of two from 4096 to 8388608",
            ));
        }
    }
    for b in &t.fsync_block_sizes {
        if !b.is_power_of_two() || !(512..=1 << 20).contains(b) {
            return Err(AgentError::invalid(
                format!("fsync block size {b}"),
                "must be a power of two from 512 to 1048576",
            ));
        }
    }
    let fsync_writes = match t.fsync_writes {
        0 => DEFAULT_FSYNC_WRITES,
        n if n > 100_000 => {
            return Err(AgentError::invalid("fsync_writes", format!("{n} > 100000")));
        }
        n => n,
    };
    let neither = !t.buffered && !t.direct && t.fsync_block_sizes.is_empty();
    Ok(ProbeParams {
        file_size,
        chunk_sizes,
        buffered: t.buffered || neither,
        direct: t.direct || neither,
        fsync_block_sizes: t.fsync_block_sizes.clone(),
        fsync_writes,
    })
}

/// Removes the probe's files however the probe ends.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Runs the probe in `dir` (created if missing).
pub fn run(dir: &Path, p: &ProbeParams) -> Result<ProbeOutcome, AgentError> {
    let io = |what: &str, path: &Path| {
        let what = format!("{what} {}", path.display());
        move |e: std::io::Error| AgentError::io(what, e)
    };
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    let id = uuid::Uuid::new_v4();
    let file = dir.join(format!(".blocklab-probe-{id}"));
    let fsync_file = dir.join(format!(".blocklab-probe-fsync-{id}"));
    let _cleanup = Cleanup(vec![file.clone(), fsync_file.clone()]);
    let mut out = ProbeOutcome::default();

    if p.buffered || p.direct {
        write_test_file(&file, p.file_size).map_err(io("write", &file))?;
    }
    let mut direct_refused = false;
    for &chunk in &p.chunk_sizes {
        for (mode, wanted) in [
            (ProbeMode::ReadBuffered, p.buffered),
            (ProbeMode::ReadDirect, p.direct),
        ] {
            if !wanted {
                continue;
            }
            let direct = mode == ProbeMode::ReadDirect;
            let row = |bytes, secs: f64, cpu: (f64, f64), dropped| ProbeRow {
                mode,
                chunk_bytes: chunk,
                mb_per_s: if secs > 0.0 {
                    bytes as f64 / 1e6 / secs
                } else {
                    0.0
                },
                user_cpu_s: cpu.0,
                system_cpu_s: cpu.1,
                cache_dropped: dropped,
                bytes,
                ..Default::default()
            };
            if direct && direct_refused {
                out.rows.push(row(0, 0.0, (0.0, 0.0), false));
                continue;
            }
            let dropped = drop_file_cache(&file);
            match read_pass(&file, chunk as usize, direct) {
                Ok((bytes, secs, cpu)) => out.rows.push(row(bytes, secs, cpu, dropped)),
                Err(e) if direct && e.raw_os_error() == Some(libc::EINVAL) => {
                    let reason = format!(
                        "O_DIRECT refused by the filesystem of {} ({e}): direct rows skipped",
                        dir.display()
                    );
                    tracing::warn!("{reason}");
                    out.skipped.push(reason);
                    direct_refused = true;
                    out.rows.push(row(0, 0.0, (0.0, 0.0), false));
                }
                Err(e) => return Err(io("read", &file)(e)),
            }
        }
    }
    let _ = std::fs::remove_file(&file);
    for &bs in &p.fsync_block_sizes {
        let r = fsync_pass(&fsync_file, bs as usize, p.fsync_writes)
            .map_err(io("write+fdatasync", &fsync_file))?;
        out.rows.push(r);
    }
    Ok(out)
}

fn write_test_file(path: &Path, size: u64) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    // Not zeros, so no filesystem can compress or skip them.
    let mut block = vec![0u8; MIB as usize];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for b in block.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.copy_from_slice(&x.to_le_bytes()[..b.len()]);
    }
    let mut left = size;
    while left > 0 {
        let n = left.min(MIB) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Writes back and evicts the file's pages; false if the kernel refused.
fn drop_file_cache(path: &Path) -> bool {
    let Ok(f) = File::open(path) else {
        return false;
    };
    f.sync_data().is_ok()
        && posix_fadvise(&f, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED).is_ok()
}

/// A buffer of `len` bytes aligned to 4096 (O_DIRECT needs aligned memory), without unsafe:
/// over-allocate and slice at the aligned offset.
fn aligned(backing: &mut Vec<u8>, len: usize) -> &mut [u8] {
    backing.clear();
    backing.resize(len + ALIGN, 0);
    let off = backing.as_ptr().align_offset(ALIGN);
    &mut backing[off..off + len]
}

fn cpu_now() -> (f64, f64) {
    match getrusage(UsageWho::RUSAGE_THREAD) {
        Ok(u) => {
            let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            (s(u.user_time()), s(u.system_time()))
        }
        Err(_) => (0.0, 0.0),
    }
}

fn cpu_since(start: (f64, f64)) -> (f64, f64) {
    let now = cpu_now();
    ((now.0 - start.0).max(0.0), (now.1 - start.1).max(0.0))
}

/// Reads the file start to end in `chunk`-byte reads: (bytes, seconds, (user, system)).
fn read_pass(path: &Path, chunk: usize, direct: bool) -> std::io::Result<(u64, f64, (f64, f64))> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    if direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let mut f = opts.open(path)?;
    let mut backing = Vec::new();
    let buf = aligned(&mut backing, chunk);
    let cpu0 = cpu_now();
    let t0 = Instant::now();
    let mut total = 0u64;
    loop {
        let n = f.read(buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    Ok((total, t0.elapsed().as_secs_f64(), cpu_since(cpu0)))
}

/// Overwrites a preallocated file block by block, fdatasync after each write (as WAL is
/// written): average and 99th percentile latency per write+fdatasync.
fn fsync_pass(path: &Path, bs: usize, writes: u32) -> std::io::Result<ProbeRow> {
    let total = bs as u64 * u64::from(writes);
    {
        let mut f = File::create(path)?;
        let zeros = vec![0u8; MIB as usize];
        let mut left = total;
        while left > 0 {
            let n = left.min(MIB) as usize;
            f.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        f.sync_all()?;
    }
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.seek(SeekFrom::Start(0))?;
    let block = vec![0xA5u8; bs];
    let mut lat: Vec<Duration> = Vec::with_capacity(writes as usize);
    let cpu0 = cpu_now();
    let t0 = Instant::now();
    for _ in 0..writes {
        let s = Instant::now();
        f.write_all(&block)?;
        f.sync_data()?;
        lat.push(s.elapsed());
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_since(cpu0);
    let _ = std::fs::remove_file(path);
    lat.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let avg = lat.iter().map(|d| us(*d)).sum::<f64>() / lat.len().max(1) as f64;
    let p99 = lat
        .get(((lat.len() as f64 * 0.99).ceil() as usize).saturating_sub(1))
        .map(|d| us(*d))
        .unwrap_or(0.0);
    Ok(ProbeRow {
        mode: ProbeMode::WriteFdatasync,
        chunk_bytes: bs as u32,
        mb_per_s: if secs > 0.0 {
            total as f64 / 1e6 / secs
        } else {
            0.0
        },
        user_cpu_s: cpu.0,
        system_cpu_s: cpu.1,
        latency_avg_us: avg,
        latency_p99_us: p99,
        cache_dropped: false,
        bytes: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_default_and_refuse() {
        let p = params(&ProbeRequest::default()).unwrap();
        assert_eq!(p.chunk_sizes.first(), Some(&4096));
        assert_eq!(p.chunk_sizes.last(), Some(&(8 << 20)));
        assert!(p.buffered && p.direct && p.fsync_block_sizes.is_empty());
        let only_fsync = params(&ProbeRequest {
            fsync_block_sizes: vec![8192],
            ..Default::default()
        })
        .unwrap();
        assert!(!only_fsync.buffered && !only_fsync.direct);
        for bad in [
            ProbeRequest {
                chunk_sizes: vec![3000],
                ..Default::default()
            },
            ProbeRequest {
                chunk_sizes: vec![16 << 20],
                ..Default::default()
            },
            ProbeRequest {
                file_size_bytes: 1000,
                ..Default::default()
            },
            ProbeRequest {
                fsync_block_sizes: vec![100],
                ..Default::default()
            },
        ] {
            assert!(params(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn aligned_buffer_is_aligned() {
        let mut v = Vec::new();
        for len in [4096, 65536, 1 << 20] {
            let b = aligned(&mut v, len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        }
    }
}
