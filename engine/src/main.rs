//! `strata-wml`: run or check a Filebench WML script (engine/README.md).
//!
//! Exit codes: 0 success; 1 the run stopped early or failed at run time
//! (statistics are still printed); 2 the script is wrong (syntax or
//! semantic error) or the command line is.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context};
use strata_wml::interp::{Interp, Options};
use strata_wml::limits;
use strata_wml::output::Output;
use strata_wml::report::{CheckError, ErrorOut};
use strata_wml::vars::Avd;
use strata_wml::{parser, runner, WmlError};

const USAGE: &str =
    "usage: strata-wml run FILE.f [--set '$var=value']... [--runtime S] [--json] [--ready-file F --go-file G]
       strata-wml check FILE.f [--set '$var=value']... [--json]
       strata-wml create FILE.f [--set '$var=value']...   (create the filesets, list their files)";

#[derive(PartialEq)]
enum Cmd {
    Run,
    Check,
    Create,
}

struct Cli {
    cmd: Cmd,
    file: String,
    json: bool,
    opts: Options,
}

fn parse_set(s: &str) -> anyhow::Result<(String, Avd)> {
    let (k, v) = s.split_once('=').with_context(|| format!("--set expects '$name=value', got `{s}`"))?;
    let k = k.trim();
    let k = if k.starts_with('$') { k.to_string() } else { format!("${k}") };
    let v = v.trim();
    let num = |t: &str, m: u64| t.parse::<u64>().ok().map(|n| Avd::Int(n * m));
    let val = match v {
        "true" => Avd::Bool(true),
        "false" => Avd::Bool(false),
        _ => match v.char_indices().last() {
            Some((i, 'k')) => num(&v[..i], 1 << 10),
            Some((i, 'm')) => num(&v[..i], 1 << 20),
            Some((i, 'g')) => num(&v[..i], 1 << 30),
            _ => num(v, 1),
        }
        .unwrap_or_else(|| Avd::Str(v.to_string())),
    };
    Ok((k, val))
}

fn parse_cli() -> anyhow::Result<Cli> {
    let mut args = std::env::args().skip(1);
    let cmd = match args.next().as_deref() {
        Some("run") => Cmd::Run,
        Some("check") => Cmd::Check,
        Some("create") => Cmd::Create,
        Some("--version") | Some("-V") => {
            println!("strata-wml {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        _ => bail!("{USAGE}"),
    };
    let check_only = cmd == Cmd::Check;
    let mut cli = Cli { cmd, file: String::new(), json: false, opts: Options { check_only, ..Default::default() } };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => cli.json = true,
            "--ready-file" => cli.opts.ready_file = Some(args.next().context("--ready-file needs a path")?.into()),
            "--go-file" => cli.opts.go_file = Some(args.next().context("--go-file needs a path")?.into()),
            "--set" => cli.opts.sets.push(parse_set(&args.next().context("--set needs a value")?)?),
            "--runtime" => {
                let v = args.next().context("--runtime needs seconds")?;
                cli.opts.runtime_s = Some(v.parse().with_context(|| format!("--runtime: `{v}` is not a number"))?);
            }
            f if !f.starts_with("--") && cli.file.is_empty() => cli.file = f.to_string(),
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    if cli.file.is_empty() {
        bail!("{USAGE}");
    }
    Ok(cli)
}

fn report_error(out: &Output, file: &str, e: &WmlError) -> u8 {
    eprintln!("{e}");
    let pos = e.pos();
    out.emit(
        "error",
        &ErrorOut {
            kind: e.kind().to_string(),
            message: e.to_string(),
            file: Some(file.to_string()),
            line: pos.map(|p| p.line),
            col: pos.map(|p| p.col),
        },
    );
    match e {
        WmlError::Syntax { .. } | WmlError::Semantic { .. } => 2,
        _ => 1,
    }
}

/// `check`: every error the file has, each with file:line:column, on
/// stderr; with `--json`, one `CheckError` object per line on stdout.
/// Exit 0 without errors, 2 with.
fn check(cli: Cli, src: &str) -> u8 {
    let (script, mut errors) = parser::parse_all(&cli.file, src);
    if errors.is_empty() {
        let out = Arc::new(Output::new(true));
        let mut interp = Interp::new(&script, cli.opts, out);
        errors = interp.check(&script);
    }
    for e in &errors {
        print_check_error(&cli.file, cli.json, e);
    }
    if !errors.is_empty() {
        return 2;
    }
    if !cli.json {
        println!("{}: OK ({:?} dialect)", cli.file, script.dialect);
    }
    0
}

fn print_check_error(file: &str, json: bool, e: &WmlError) {
    if !json {
        eprintln!("{}", e.located(file));
        return;
    }
    let pos = e.pos();
    let obj = CheckError {
        file: file.to_string(),
        line: pos.map(|p| p.line),
        column: pos.map(|p| p.col),
        message: e.message(),
        kind: e.kind().to_string(),
    };
    println!("{}", serde_json::to_string(&obj).unwrap_or_default());
}

fn real_main() -> anyhow::Result<u8> {
    let cli = match parse_cli() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e:#}");
            return Ok(2);
        }
    };
    // Process instances inherit it (docs/filebench-language.md#processes-and-threads).
    limits::raise_nofile();
    let out = Arc::new(Output::new(cli.json));
    let src = match std::fs::read_to_string(&cli.file) {
        Ok(s) => s,
        Err(e) => {
            let err = WmlError::io(format!("cannot read {}", cli.file), e);
            if cli.cmd == Cmd::Check {
                print_check_error(&cli.file, cli.json, &err);
                return Ok(2);
            }
            return Ok(report_error(&out, &cli.file, &err).max(2));
        }
    };
    if cli.cmd == Cmd::Check {
        return Ok(check(cli, &src));
    }
    if !cli.json && cli.cmd == Cmd::Run {
        out.plain(&format!("Filebench Version 1.5-alpha3 (strata-wml {})", env!("CARGO_PKG_VERSION")));
    }
    let (script, errors) = parser::parse_all(&cli.file, &src);
    if !errors.is_empty() {
        let codes: Vec<u8> = errors.iter().map(|e| report_error(&out, &cli.file, e)).collect();
        return Ok(codes[0]);
    }
    runner::install_signal_handlers();
    if cli.cmd == Cmd::Create {
        let mut interp = Interp::new(&script, cli.opts, Arc::new(Output::new(true)));
        return Ok(match interp.create_only(&script) {
            Ok(()) => match interp.write_listing(&mut std::io::stdout().lock()) {
                Ok(()) => 0,
                Err(e) => report_error(&out, &cli.file, &WmlError::io("writing the listing", e)),
            },
            Err(e) => report_error(&out, &cli.file, &e),
        });
    }
    let mut interp = Interp::new(&script, cli.opts, out.clone());
    match interp.execute(&script) {
        Ok(o) => Ok(o.exit_code as u8),
        Err(e) => Ok(report_error(&out, &cli.file, &e)),
    }
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("strata-wml: {e:#}");
            ExitCode::from(1)
        }
    }
}
