//! dwarf-layouts: struct member offsets, constants and globals from an ELF's DWARF.
//! See README.md for the query syntax and the JSON written to stdout.

mod answer;
mod dwarf;
mod json;
mod layout;
mod load;
mod query;
mod reverse;
mod scan;

use dwarf::{Ctx, Dwarf, Res};
use json::J;
use query::{parse_num, Resolver};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

const USAGE: &str = "usage: dwarf-layouts [options] ELF [QUERY...]
  QUERY  Type.member[.member|[i]]...  member path (Type may also be a global variable;
                                      global->member is accepted for a pointer)
         Type::NAME                   constant (static const member, enumerator)
         name                         a global variable and/or a type
options:
  --flatten NAME     list the members of global or type NAME, flattened (repeatable)
  --depth N          flatten this many path components deep (default 3)
  --at NAME+OFF      name the member of NAME at byte offset OFF (repeatable)
  -f FILE            read more queries from FILE, one per line ('#' comments)
  --debug-dir DIR    where to look for a stripped ELF's debug file (repeatable;
                     default /usr/lib/debug), by build id and .gnu_debuglink
  -j N               scan threads (default: cores, at most 8)
  --odr-limit N      compare at most N copies of a type for ODR conflicts (default all)
  --compact          one-line JSON";

#[derive(Default)]
pub struct Args {
    pub elf: PathBuf,
    pub queries: Vec<String>,
    pub flatten: Vec<String>,
    pub at: Vec<(String, u64)>,
    pub debug_dirs: Vec<PathBuf>,
    pub depth: u32,
    pub threads: usize,
    pub odr_limit: usize,
    pub compact: bool,
}

fn parse_args() -> Res<Args> {
    let mut a = Args { depth: 3, odr_limit: usize::MAX, ..Default::default() };
    a.threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let mut it = std::env::args().skip(1);
    let mut elf = None;
    while let Some(arg) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        let num = |s: String| parse_num(&s).ok_or_else(|| format!("not a number: {s}"));
        match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.into()),
            "--flatten" => a.flatten.push(val()?),
            "--depth" => a.depth = num(val()?)? as u32,
            "--at" => {
                let v = val()?;
                let (n, o) = v.rsplit_once('+').ok_or_else(|| format!("--at wants NAME+OFFSET: {v}"))?;
                a.at.push((n.to_string(), num(o.to_string())?));
            }
            "-f" => {
                let f = val()?;
                let text = std::fs::read_to_string(&f).map_err(|e| format!("{f}: {e}"))?;
                a.queries.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from));
            }
            "--debug-dir" => a.debug_dirs.push(PathBuf::from(val()?)),
            "-j" => a.threads = num(val()?)?.max(1) as usize,
            "--odr-limit" => a.odr_limit = num(val()?)? as usize,
            "--compact" => a.compact = true,
            s if s.starts_with('-') => return Err(format!("unknown option {s}\n{USAGE}")),
            _ if elf.is_none() => elf = Some(PathBuf::from(arg)),
            _ => a.queries.push(arg),
        }
    }
    a.elf = elf.ok_or(USAGE)?;
    if a.debug_dirs.is_empty() {
        a.debug_dirs.push(PathBuf::from("/usr/lib/debug"));
    }
    Ok(a)
}

/// The names the scan must find for one root name ("ns::Outer::T").
fn want(w: &mut scan::Wanted, root: &str) {
    let parts: Vec<&str> = root.trim_start_matches("::").split("::").collect();
    if let Some((last, scopes)) = parts.split_last() {
        w.types.insert(last.as_bytes().to_vec());
        w.vars.insert(last.as_bytes().to_vec());
        w.scopes.extend(scopes.iter().map(|s| s.as_bytes().to_vec()));
        // the enclosing classes are looked up too (to name type-unit stubs)
        w.types.extend(scopes.iter().map(|s| s.as_bytes().to_vec()));
    }
}

fn run() -> Res<J> {
    let t0 = Instant::now();
    let a = parse_args()?;
    let origin = load::locate(&a.elf, &a.debug_dirs)?;
    let cache = load::open_cache(&origin.debug_file)?;
    let secs = load::sections(&cache)?;
    let d = Dwarf::new(&secs)?;
    let t_load = t0.elapsed();

    let mut w = scan::Wanted::default();
    let roots = |q: &str| -> Vec<String> {
        if let Some((root, _)) = q.replacen("->", ".", 1).split_once('.') {
            vec![root.to_string()]
        } else if let Some((ty, _)) = q.rsplit_once("::") {
            vec![ty.to_string(), q.to_string()]
        } else {
            vec![q.to_string()]
        }
    };
    for q in a.queries.iter().chain(&a.flatten).chain(a.at.iter().map(|x| &x.0)) {
        for r in roots(q) {
            want(&mut w, &r);
        }
    }
    let t1 = Instant::now();
    let sc = scan::scan(&d, &w, a.threads)?;
    let t_scan = t1.elapsed();

    let t2 = Instant::now();
    let ctx = Ctx::new(&d);
    let mut answers = answer::answer(&a, &ctx, &sc.hits)?;
    // Classes some unit knows only by declaration: find their definitions by name
    // with a second scan and answer again (twice at most: a completed class can
    // declare more).
    let mut rescans = 0;
    let mut dies = sc.dies;
    while !ctx.incomplete.borrow().is_empty() && rescans < 2 {
        let names: Vec<String> = std::mem::take(&mut *ctx.incomplete.borrow_mut()).into_iter().collect();
        let mut w2 = scan::Wanted::default();
        names.iter().for_each(|n| want(&mut w2, n));
        w2.vars.clear();
        let sc2 = scan::scan(&d, &w2, a.threads)?;
        dies += sc2.dies;
        for n in &names {
            let mut r2 = Resolver::new(&ctx, &sc2.hits, a.odr_limit);
            let first = ctx.quiet(|| r2.type_choice(n))?.and_then(|tc| tc.variants.first().map(|v| v.die));
            if let Some(die) = first {
                ctx.completions.borrow_mut().insert(n.clone(), die);
            }
        }
        ctx.incomplete.borrow_mut().clear();
        answers = answer::answer(&a, &ctx, &sc.hits)?;
        rescans += 1;
    }
    let t_resolve = t2.elapsed();

    let mut out = J::obj();
    out.set("file", J::Str(a.elf.display().to_string()));
    out.set("debug_file", J::Str(origin.debug_file.display().to_string()));
    out.set("build_id", origin.build_id.map_or(J::Null, J::Str));
    let versions: BTreeSet<u16> = d.units.iter().map(|h| h.version()).collect();
    let mut dw = J::obj();
    dw.set("versions", J::Arr(versions.into_iter().map(|v| J::Int(v.into())).collect()));
    dw.set("units", J::Int(d.units.len() as i128));
    dw.set("type_units", J::Int(d.sigs.len() as i128));
    dw.set("compressed", J::Bool(secs.compressed));
    out.set("dwarf", dw);
    if let J::Obj(kv) = answers {
        kv.into_iter().for_each(|(k, v)| out.set(&k, v));
    }
    let mut st = J::obj();
    st.set("threads", J::Int(a.threads as i128));
    st.set("dies_scanned", J::Int(dies.into()));
    st.set("rescans", J::Int(rescans.into()));
    st.set("completed", J::Arr(ctx.completions.borrow().keys().map(|k| J::Str(k.clone())).collect()));
    st.set("hits", J::Int(sc.hits.len() as i128));
    for (k, t) in [("load_ms", t_load), ("scan_ms", t_scan), ("resolve_ms", t_resolve), ("total_ms", t0.elapsed())] {
        st.set(k, J::Int(t.as_millis() as i128));
    }
    out.set("stats", st);
    Ok(out)
}

fn main() {
    match run() {
        Ok(j) => {
            let compact = std::env::args().any(|a| a == "--compact");
            let mut s = String::new();
            j.write(&mut s, if compact { None } else { Some(2) }, 0);
            println!("{s}");
        }
        Err(e) => {
            eprintln!("dwarf-layouts: {e}");
            std::process::exit(2);
        }
    }
}
