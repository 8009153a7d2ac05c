//! `\shell` and `\setshell` (standalone mode only): the command runs from its argv, never
//! through a shell; `:name` words are replaced by variable values, `::x` gives `:x`. It
//! blocks the load thread until it exits, as pgbench's system() and popen() do.

use blocklab_script::vars::Variables;

pub fn run(vars: &mut Variables, set: Option<&str>, argv: &[String]) -> Result<(), String> {
    let mut args = Vec::with_capacity(argv.len());
    for a in argv {
        if let Some(rest) = a.strip_prefix("::") {
            args.push(format!(":{rest}"));
        } else if let Some(name) = a.strip_prefix(':') {
            let id = vars.symbols().get(name);
            match id.and_then(|id| vars.text(id)) {
                Some(v) => args.push(v),
                None => return Err(format!("{}: undefined variable \"{name}\"", which(set))),
            }
        } else {
            args.push(a.clone());
        }
    }
    let mut cmd = std::process::Command::new(&args[0]);
    cmd.args(&args[1..]).stdin(std::process::Stdio::null());
    let Some(var) = set else {
        let status = cmd
            .status()
            .map_err(|e| format!("\\shell: could not run \"{}\": {e}", args[0]))?;
        if !status.success() {
            return Err(format!("\\shell command failed: {status}"));
        }
        return Ok(());
    };
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("\\setshell: could not run \"{}\": {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!("\\setshell command failed: {}", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let value: i64 = text.trim().parse().map_err(|_| {
        format!(
            "shell command must return an integer (not \"{}\")",
            text.trim()
        )
    })?;
    vars.set_text_by_name(var, value.to_string())
        .map_err(|e| format!("\\setshell: {e}"))
}

fn which(set: Option<&str>) -> &'static str {
    if set.is_some() {
        "\\setshell"
    } else {
        "\\shell"
    }
}
