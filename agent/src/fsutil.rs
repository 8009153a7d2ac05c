//! Small filesystem helpers: directories and installs the PostgreSQL user must reach.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::AgentError;

pub fn create_dir_0755(dir: &Path) -> Result<(), AgentError> {
    if !dir.is_dir() {
        std::fs::create_dir_all(dir)
            .map_err(|e| AgentError::io(format!("create {}", dir.display()), e))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| AgentError::io(format!("chmod {}", dir.display()), e))?;
    }
    Ok(())
}

/// Makes the install readable (and directories/executables traversable) by the
/// unprivileged PostgreSQL user whatever the agent's umask was.
pub fn make_world_readable(dir: &Path) -> Result<(), AgentError> {
    let walk_err = |e: std::io::Error| AgentError::io(format!("chmod under {}", dir.display()), e);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        set_mode_bits(&d, 0o755).map_err(walk_err)?;
        for entry in std::fs::read_dir(&d).map_err(walk_err)? {
            let entry = entry.map_err(walk_err)?;
            let ft = entry.file_type().map_err(walk_err)?;
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                let mode = entry.metadata().map_err(walk_err)?.permissions().mode();
                let add = if mode & 0o100 != 0 { 0o555 } else { 0o444 };
                set_mode_bits(&entry.path(), add).map_err(walk_err)?;
            }
        }
    }
    Ok(())
}

fn set_mode_bits(path: &Path, add: u32) -> std::io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & add != add {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode((mode | add) & 0o7777))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_made_readable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sub/file");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(
            dir.path().join("sub"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        make_world_readable(dir.path()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&f), 0o644);
        assert_eq!(mode(&dir.path().join("sub")), 0o755);
    }
}
