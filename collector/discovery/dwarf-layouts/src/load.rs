//! Opening the ELF file and handing its DWARF sections to gimli.
//!
//! The file is read through `object::ReadCache`, which reads (and keeps) only the byte
//! ranges asked for: the headers, the notes and the few DWARF sections the reader needs.
//! A 313 MB server binary thus costs its ~230 MB of .debug_info/.debug_abbrev/.debug_str
//! in memory, not its .text or .debug_loc, and needs no mmap (so no `unsafe`).
//! Compressed sections (SHF_COMPRESSED with zlib or zstd, and GNU .zdebug_*) are
//! inflated by `object`.

use object::{Object, ObjectSection, ReadCache};
use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Raw bytes of the sections the reader uses; empty when absent.
pub struct Sections<'a> {
    pub info: Cow<'a, [u8]>,
    pub abbrev: Cow<'a, [u8]>,
    pub str_: Cow<'a, [u8]>,
    pub types: Cow<'a, [u8]>,
    pub str_offsets: Cow<'a, [u8]>,
    pub line_str: Cow<'a, [u8]>,
    pub little_endian: bool,
    pub compressed: bool,
}

/// What was learnt about the files: the one given and the one the DWARF came from.
pub struct Origin {
    pub build_id: Option<String>,
    pub debug_file: PathBuf,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn section<'a>(obj: &object::File<'a, &'a ReadCache<File>>, name: &str, compressed: &mut bool) -> Result<Cow<'a, [u8]>, String> {
    match obj.section_by_name(name) {
        None => Ok(Cow::Borrowed(&[])),
        Some(s) => {
            let data = s.uncompressed_data().map_err(|e| format!("{name}: {e}"))?;
            if matches!(data, Cow::Owned(_)) {
                *compressed = true;
            }
            Ok(data)
        }
    }
}

pub fn open_cache(path: &Path) -> Result<ReadCache<File>, String> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(ReadCache::new(f))
}

/// Where a stripped binary's separate debug file may be: by build id under each debug
/// directory's .build-id/, then by .gnu_debuglink beside the binary, in its .debug/
/// folder and under each debug directory (the places gdb looks, in gdb's order).
/// `debug_dirs` are gdb's debug-file-directory (default /usr/lib/debug); a server in
/// a container would be given /proc/PID/root/usr/lib/debug.
fn debug_candidates(path: &Path, build_id: Option<&str>, link: Option<&[u8]>, debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(id) = build_id.filter(|id| id.len() > 2) {
        for d in debug_dirs {
            out.push(d.join(".build-id").join(&id[..2]).join(format!("{}.debug", &id[2..])));
        }
    }
    if let Some(name) = link.map(|l| String::from_utf8_lossy(l).into_owned()) {
        let dir = path.parent().unwrap_or(Path::new("."));
        out.push(dir.join(&name));
        out.push(dir.join(".debug").join(&name));
        let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        for d in debug_dirs {
            out.push(d.join(abs.strip_prefix("/").unwrap_or(&abs)).join(&name));
        }
    }
    out
}

/// Opens `path`; when it has no .debug_info, finds its separate debug file (same build
/// id when both have one) and returns that file's path instead.
pub fn locate(path: &Path, debug_dirs: &[PathBuf]) -> Result<Origin, String> {
    let cache = open_cache(path)?;
    let obj = object::File::parse(&cache).map_err(|e| format!("{}: {e}", path.display()))?;
    let build_id = obj.build_id().ok().flatten().map(hex);
    if obj.section_by_name(".debug_info").is_some() {
        return Ok(Origin { build_id, debug_file: path.to_path_buf() });
    }
    let link = obj.gnu_debuglink().ok().flatten().map(|(name, _crc)| name.to_vec());
    for cand in debug_candidates(path, build_id.as_deref(), link.as_deref(), debug_dirs) {
        if cand == path || !cand.is_file() {
            continue;
        }
        let c = match open_cache(&cand) { Ok(c) => c, Err(_) => continue };
        let dobj = match object::File::parse(&c) { Ok(o) => o, Err(_) => continue };
        let did = dobj.build_id().ok().flatten().map(hex);
        if build_id.is_some() && did.is_some() && did != build_id {
            continue; // a debug file of another build: wrong offsets, worse than none
        }
        if dobj.section_by_name(".debug_info").is_some() {
            return Ok(Origin { build_id: build_id.or(did), debug_file: cand });
        }
    }
    Err(format!("{}: no .debug_info, and no separate debug file found", path.display()))
}

pub fn sections<'a>(cache: &'a ReadCache<File>) -> Result<Sections<'a>, String> {
    let obj = object::File::parse(cache).map_err(|e| e.to_string())?;
    let mut c = false;
    Ok(Sections {
        info: section(&obj, ".debug_info", &mut c)?,
        abbrev: section(&obj, ".debug_abbrev", &mut c)?,
        str_: section(&obj, ".debug_str", &mut c)?,
        types: section(&obj, ".debug_types", &mut c)?,
        str_offsets: section(&obj, ".debug_str_offsets", &mut c)?,
        line_str: section(&obj, ".debug_line_str", &mut c)?,
        little_endian: obj.is_little_endian(),
        compressed: c,
    })
}
