//! The one pass over every unit: find the DIEs of the type and variable names asked for.
//!
//! Why it is fast: nearly all of .debug_info is function bodies (parameters, locals,
//! lexical blocks, inlined calls) and the bodies of types. The scan only walks the unit
//! root, namespaces, and the classes that scope a requested nested name; any other DIE
//! with children is skipped whole, by jumping to its DW_AT_sibling when it has one (GCC
//! emits it for all but the last child) or else by skipping abbreviation-sized
//! attributes without decoding them. For a candidate DIE only the handful of attributes
//! we need are decoded. Nothing is materialized but the hits; the members are read
//! later, at random, for the few definitions that are used.
//!
//! Units are split into contiguous byte-balanced runs, one per thread.

use crate::dwarf::{default_str_base, err, unit_start, DieRef, Dwarf, Res, R};
use gimli::{constants as c, Abbreviation, AttributeValue, DebugStrOffsetsBase, EntriesRaw, UnitOffset};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Names to look for: last components of type names, global variable names, and the
/// names of classes to descend into because a requested name is nested in them.
#[derive(Default)]
pub struct Wanted {
    pub types: HashSet<Vec<u8>>,
    pub vars: HashSet<Vec<u8>>,
    pub scopes: HashSet<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub struct Hit {
    pub is_var: bool,
    /// Qualified by the enclosing namespaces / classes, "a::b::name".
    pub qname: String,
    pub die: DieRef,
    pub tag: c::DwTag,
    pub decl: bool,
    /// Variables: has DW_AT_location (storage is here); types: has children or a size.
    pub defined: bool,
    pub external: bool,
}

#[derive(Clone, Copy)]
enum Spec {
    Unit(usize),
    Section(usize),
}

#[derive(Default)]
struct Attrs<'a> {
    name: Option<AttributeValue<R<'a>>>,
    decl: bool,
    external: bool,
    sibling: Option<UnitOffset<usize>>,
    /// Unit offset, or section offset (DW_FORM_ref_addr, as old GCCs write it).
    spec: Option<Spec>,
    location: bool,
    byte_size: bool,
    str_base: Option<DebugStrOffsetsBase<usize>>,
    signature: Option<u64>,
}

/// Decodes only the attributes the scan uses; skips the others by their form's size.
fn read_attrs<'a>(raw: &mut EntriesRaw<'_, '_, R<'a>>, ab: &Abbreviation) -> gimli::Result<Attrs<'a>> {
    let mut a = Attrs::default();
    for spec in ab.attributes() {
        match spec.name() {
            c::DW_AT_name | c::DW_AT_declaration | c::DW_AT_external | c::DW_AT_sibling | c::DW_AT_specification
            | c::DW_AT_location | c::DW_AT_byte_size | c::DW_AT_str_offsets_base | c::DW_AT_signature => {
                let at = raw.read_attribute(*spec)?;
                match (at.name(), at.value()) {
                    (c::DW_AT_name, v) => a.name = Some(v),
                    (c::DW_AT_declaration, AttributeValue::Flag(f)) => a.decl = f,
                    (c::DW_AT_external, AttributeValue::Flag(f)) => a.external = f,
                    (c::DW_AT_sibling, AttributeValue::UnitRef(o)) => a.sibling = Some(o),
                    (c::DW_AT_specification, AttributeValue::UnitRef(o)) => a.spec = Some(Spec::Unit(o.0)),
                    (c::DW_AT_specification, AttributeValue::DebugInfoRef(o)) => a.spec = Some(Spec::Section(o.0)),
                    (c::DW_AT_location, _) => a.location = true,
                    (c::DW_AT_byte_size, _) => a.byte_size = true,
                    (c::DW_AT_str_offsets_base, AttributeValue::DebugStrOffsetsBase(b)) => a.str_base = Some(b),
                    (c::DW_AT_signature, AttributeValue::DebugTypesRef(s)) => a.signature = Some(s.0),
                    _ => {}
                }
            }
            _ => raw.skip_attributes(std::slice::from_ref(spec))?,
        }
    }
    Ok(a)
}

struct UnitScan<'d, 'a, 'w> {
    d: &'d Dwarf<'a>,
    w: &'w Wanted,
    unit: usize,
    hits: Vec<Hit>,
    dies: u64,
}

impl<'d, 'a> UnitScan<'d, 'a, '_> {
    fn run(&mut self, ab: &gimli::Abbreviations) -> gimli::Result<()> {
        let h = &self.d.units[self.unit];
        let start = unit_start(h);
        let types = self.unit >= self.d.n_info;
        let type_unit = matches!(h.type_(), gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. });
        let mut str_base = default_str_base(h);
        let mut raw = h.entries_raw(ab, None)?;
        // `raw` counts depth from where it was (re)started; `base` makes it absolute.
        let mut base: isize = 0;
        // Enclosing scopes we descended into: (depth, qualified name, is_class).
        let mut scopes: Vec<(isize, String, bool)> = Vec::new();
        // Matching declarations of this unit (by section offset) -> qualified name, for
        // definitions that name them through DW_AT_specification (GCC's
        // `extern T x;` ... `T x;`, and type units' out-of-namespace definitions).
        let mut decls: HashMap<usize, String> = HashMap::new();
        while !raw.is_empty() {
            let depth = base + raw.next_depth();
            let off = raw.next_offset();
            let abbrev = match raw.read_abbreviation()? {
                Some(a) => a,
                None => continue, // a null entry: the end of a list of children
            };
            self.dies += 1;
            while scopes.last().map_or(false, |s| s.0 >= depth) {
                scopes.pop();
            }
            let tag = abbrev.tag();
            let kids = abbrev.has_children();
            if depth == 0 {
                let a = read_attrs(&mut raw, abbrev)?;
                if let Some(b) = a.str_base {
                    str_base = b;
                }
                continue; // the unit root: descend
            }
            let in_class = scopes.last().map_or(false, |s| s.2);
            let is_type = matches!(
                tag,
                c::DW_TAG_structure_type | c::DW_TAG_class_type | c::DW_TAG_union_type | c::DW_TAG_enumeration_type | c::DW_TAG_typedef
            );
            let is_var = tag == c::DW_TAG_variable && !in_class;
            if !(is_type || is_var || tag == c::DW_TAG_namespace) {
                if kids {
                    let a = read_attrs(&mut raw, abbrev)?;
                    self.skip_subtree(&mut raw, &mut base, ab, depth, off, a.sibling)?;
                } else {
                    raw.skip_attributes(abbrev.attributes())?;
                }
                continue;
            }
            let a = read_attrs(&mut raw, abbrev)?;
            let name = a.name.and_then(|v| self.d.str_of(v, h, str_base));
            let qualify = |n: &str| match scopes.last() {
                Some(s) if !s.1.is_empty() && !n.is_empty() => format!("{}::{n}", s.1),
                Some(s) if n.is_empty() => s.1.clone(),
                _ => n.to_string(),
            };
            let die = DieRef { types, off: start + off.0 };
            if tag == c::DW_TAG_namespace {
                // Old GCCs wrap `extern` declarations in a namespace named "::" (the
                // global one): it scopes, but adds nothing to the qualified name.
                let n = match name {
                    None => "(anonymous namespace)".into(),
                    Some(b"::") => String::new(),
                    Some(n) => String::from_utf8_lossy(n).into_owned(),
                };
                scopes.push((depth, qualify(&n), false));
                continue;
            }
            if is_var {
                let named = match (name, a.spec) {
                    (Some(n), _) if self.w.vars.contains(n) => Some(qualify(&String::from_utf8_lossy(n))),
                    (None, Some(Spec::Unit(s))) => decls.get(&(start + s)).cloned(),
                    (None, Some(Spec::Section(s))) => decls.get(&s).cloned(),
                    _ => None,
                };
                if let Some(q) = named {
                    if a.decl {
                        decls.insert(start + off.0, q.clone());
                    }
                    let defined = a.location || a.spec.is_some() && !a.decl;
                    self.hits.push(Hit { is_var: true, qname: q, die, tag, decl: a.decl, defined, external: a.external || a.spec.is_some() });
                }
            } else {
                // A definition completing a declaration made elsewhere (GCC's type
                // units: `namespace ns { struct T; }  struct T {...}`; strict DWARF 2:
                // an unnamed definition) takes the declaration's qualified name.
                let q = match (a.spec, name) {
                    (Some(Spec::Unit(s)), _) => decls.get(&(start + s)).cloned(),
                    (Some(Spec::Section(s)), _) => decls.get(&s).cloned(),
                    (None, Some(n)) if self.w.types.contains(n) => Some(qualify(&String::from_utf8_lossy(n))),
                    // Enums nested in a class we descended into: candidates for `T::NAME`
                    // constants (their enum's name is not in the request).
                    (None, _) if in_class && tag == c::DW_TAG_enumeration_type => {
                        Some(qualify(&name.map_or("(anonymous enum)".into(), |n| String::from_utf8_lossy(n).into_owned())))
                    }
                    _ => None,
                };
                if let Some(q) = &q {
                    if a.decl {
                        decls.insert(die.off, q.clone());
                    }
                    let defined = !a.decl && (kids || a.byte_size);
                    self.hits.push(Hit { is_var: false, qname: q.clone(), die, tag, decl: a.decl, defined, external: false });
                }
                // Descend into a class only when a requested name is nested in it
                // (checked before any allocation: this runs for every type DIE).
                let descend = kids
                    && tag != c::DW_TAG_typedef
                    && match (&q, name, a.signature) {
                        (Some(q), _, _) => q.rsplit("::").next().map_or(false, |n| self.w.scopes.contains(n.as_bytes())),
                        (None, Some(n), _) => self.w.scopes.contains(n),
                        // clang's type units nest a class's enums under a nameless stub
                        // of the class: always looked into.
                        (None, None, Some(_)) => type_unit,
                        (None, None, None) => false,
                    };
                if descend {
                    let q = match (q, name, a.signature) {
                        (Some(q), _, _) => q,
                        (None, Some(n), _) => qualify(&String::from_utf8_lossy(n)),
                        // named after the signature until the scan is over (see `scan`)
                        (None, None, sig) => format!("{SIG}{:016x}", sig.unwrap_or(0)),
                    };
                    scopes.push((depth, q, true));
                    continue; // descend: a requested name is nested in this class
                }
            }
            if kids {
                self.skip_subtree(&mut raw, &mut base, ab, depth, off, a.sibling)?;
            }
        }
        Ok(())
    }

    /// Leaves `raw` just past the subtree of the DIE at `off` (whose attributes are read).
    fn skip_subtree<'ab>(
        &mut self,
        raw: &mut EntriesRaw<'ab, 'd, R<'a>>,
        base: &mut isize,
        ab: &'ab gimli::Abbreviations,
        depth: isize,
        off: UnitOffset<usize>,
        sibling: Option<UnitOffset<usize>>,
    ) -> gimli::Result<()> {
        if let Some(sib) = sibling.filter(|s| s.0 > off.0 && s.0 >= raw.next_offset().0) {
            *raw = self.d.units[self.unit].entries_raw(ab, Some(sib))?;
            *base = depth;
            return Ok(());
        }
        while *base + raw.next_depth() > depth && !raw.is_empty() {
            if let Some(a) = raw.read_abbreviation()? {
                raw.skip_attributes(a.attributes())?;
                self.dies += 1;
            }
        }
        Ok(())
    }
}

/// Prefix of a scope named by a type signature (see `scan`).
const SIG: &str = "\u{1}sig:";

pub struct Scan {
    pub hits: Vec<Hit>,
    pub dies: u64,
}

fn scan_units<'a>(d: &Dwarf<'a>, w: &Wanted, units: std::ops::Range<usize>) -> Res<Scan> {
    let mut out = Scan { hits: Vec::new(), dies: 0 };
    // Units often share an abbreviation table (always with dwz and type units).
    let mut cache: HashMap<usize, Rc<gimli::Abbreviations>> = HashMap::new();
    for unit in units {
        let h = &d.units[unit];
        let key = h.debug_abbrev_offset().0;
        let ab = match cache.get(&key) {
            Some(a) => a.clone(),
            None => {
                let a = Rc::new(h.abbreviations(&d.abbrev).map_err(err)?);
                if cache.len() > 64 {
                    cache.clear();
                }
                cache.insert(key, a.clone());
                a
            }
        };
        let mut us = UnitScan { d, w, unit, hits: Vec::new(), dies: 0 };
        us.run(&ab).map_err(|e| format!("unit at {:#x}: {}", unit_start(h), err(e)))?;
        out.hits.append(&mut us.hits);
        out.dies += us.dies;
    }
    Ok(out)
}

/// Scans all units with `threads` threads; hits come back in section order.
pub fn scan<'a>(d: &Dwarf<'a>, w: &Wanted, threads: usize) -> Res<Scan> {
    let sizes: Vec<usize> = d.units.iter().map(|h| h.length_including_self()).collect();
    let total: usize = sizes.iter().sum();
    let threads = threads.clamp(1, d.units.len().max(1));
    let mut runs = Vec::new();
    let (mut begin, mut acc) = (0, 0);
    for (i, s) in sizes.iter().enumerate() {
        acc += s;
        if acc * threads >= total * (runs.len() + 1) && runs.len() + 1 < threads {
            runs.push(begin..i + 1);
            begin = i + 1;
        }
    }
    runs.push(begin..d.units.len());
    let results: Vec<Res<Scan>> = std::thread::scope(|s| {
        let handles: Vec<_> = runs.into_iter().map(|r| s.spawn(move || scan_units(d, w, r))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("scan thread panicked".into()))).collect()
    });
    let mut all = Scan { hits: Vec::new(), dies: 0 };
    for r in results {
        let mut r = r?;
        all.hits.append(&mut r.hits);
        all.dies += r.dies;
    }
    // Name signature-named scopes after the type the signature designates, when
    // that type is a hit (it is when its name was requested).
    let by_die: HashMap<DieRef, String> = all.hits.iter().map(|h| (h.die, h.qname.clone())).collect();
    for h in all.hits.iter_mut().filter(|h| h.qname.starts_with(SIG)) {
        let rest = &h.qname[SIG.len()..];
        let (hex, tail) = rest.split_at(rest.find("::").unwrap_or(rest.len()));
        let named = u64::from_str_radix(hex, 16).ok().and_then(|s| d.sigs.get(&s)).and_then(|r| by_die.get(r));
        if let Some(n) = named {
            h.qname = format!("{n}{tail}");
        }
    }
    Ok(all)
}
