//! Answering the requests from the scan's hits: which definition of a name to use,
//! member paths, constants, globals.

use crate::dwarf::{flag, udata, Ctx, Die, DieRef, Res};
use crate::layout::{bytes_of_bits, is_aggregate, Kind, Member};
use crate::scan::Hit;
use gimli::{constants as c, AttributeValue};
use std::collections::HashMap;

/// One layout of a type name, and how many complete definitions have it.
pub struct Variant {
    pub die: DieRef,
    pub size: Option<u64>,
    pub copies: usize,
    pub fingerprint: Fingerprint,
}

/// A layout: one ("name@bit_offset:bit_size", member type size) per member.
pub type Fingerprint = Vec<(String, Option<u64>)>;

/// Two layouts agree when sizes, members and offsets do, and so do the member types'
/// sizes where both copies know them. A copy often knows a member's type only by
/// declaration: GCC emits a class with virtual functions in full only in the unit
/// that holds its vtable, so such sizes are unknown elsewhere.
fn compatible(a: &[(String, Option<u64>)], b: &[(String, Option<u64>)]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0 && (x.1 == y.1 || x.1.is_none() || y.1.is_none()))
}

fn known(fp: &[(String, Option<u64>)]) -> usize {
    fp.iter().filter(|m| m.1.is_some()).count()
}

impl Variant {
    /// What first differs from another variant's layout, for the report.
    pub fn differs_from(&self, other: &Variant) -> String {
        let show = |m: &(String, Option<u64>)| format!("{} size {}", m.0, m.1.map_or("?".into(), |s| s.to_string()));
        let (a, b) = (&self.fingerprint, &other.fingerprint);
        match a.iter().zip(b).position(|(x, y)| !compatible(std::slice::from_ref(x), std::slice::from_ref(y))) {
            Some(i) => format!("{} vs {}", show(&a[i]), show(&b[i])),
            None if a.len() != b.len() => format!("{} vs {} members", a.len() - 1, b.len() - 1),
            None => "size".into(),
        }
    }
}

pub struct TypeChoice {
    pub qname: String,
    /// Most common layout first; more than one means an ODR conflict.
    pub variants: Vec<Variant>,
}

pub struct GlobalChoice {
    pub qname: String,
    pub die: DieRef,
    pub ty: Option<DieRef>,
    pub defined: bool,
    pub external: bool,
    pub address: Option<u64>,
    pub definitions: usize,
}

/// What a path, flatten or offset query starts from: a type, or a global's object.
pub struct Root {
    pub agg: DieRef,
    /// Set when the root is a global holding a pointer: offsets are in the object it
    /// points to.
    pub via_pointer: bool,
}

pub struct Found {
    pub bits: u64,
    pub m: Member,
}

pub struct PathOut {
    pub bits: u64,
    pub bit_size: Option<u64>,
    pub size: Option<u64>,
    pub ty: Option<DieRef>,
}

pub struct Resolver<'r, 'a> {
    pub ctx: &'r Ctx<'a>,
    hits: &'r [Hit],
    /// How many complete copies of a type to compare for ODR conflicts.
    pub odr_limit: usize,
    types: HashMap<String, Option<std::rc::Rc<TypeChoice>>>,
}

/// Splits "name[1][2]" into ("name", [1, 2]).
pub fn split_index(comp: &str) -> Res<(&str, Vec<u64>)> {
    let open = match comp.find('[') { Some(o) => o, None => return Ok((comp, vec![])) };
    let mut idx = Vec::new();
    for part in comp[open + 1..].split('[') {
        let n = part.strip_suffix(']').ok_or_else(|| format!("bad index in {comp:?}"))?;
        idx.push(parse_num(n).ok_or_else(|| format!("bad index in {comp:?}"))?);
    }
    Ok((&comp[..open], idx))
}

pub fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

impl<'r, 'a> Resolver<'r, 'a> {
    pub fn new(ctx: &'r Ctx<'a>, hits: &'r [Hit], odr_limit: usize) -> Self {
        Resolver { ctx, hits, odr_limit, types: HashMap::new() }
    }

    /// Hits whose qualified name is `name`, else those ending in "::name".
    fn matching(&self, name: &str, var: bool) -> Vec<&'r Hit> {
        let name = name.trim_start_matches("::");
        let exact: Vec<_> = self.hits.iter().filter(|h| h.is_var == var && h.qname == name).collect();
        if !exact.is_empty() {
            return exact;
        }
        let suffix = format!("::{name}");
        let by_suffix: Vec<_> = self.hits.iter().filter(|h| h.is_var == var && h.qname.ends_with(&suffix)).collect();
        if !by_suffix.is_empty() {
            return by_suffix;
        }
        // Strict DWARF 2 has no namespaces: "ns::T::E" can only be found as "T::E".
        let parts: Vec<&str> = name.split("::").collect();
        for i in 1..parts.len() {
            let shorter = parts[i..].join("::");
            let found: Vec<_> = self.hits.iter().filter(|h| h.is_var == var && h.qname == shorter).collect();
            if !found.is_empty() {
                return found;
            }
        }
        vec![]
    }

    /// A layout fingerprint: size, then each data member and base with bit offset,
    /// bit size and type size.
    fn fingerprint(&self, die: DieRef) -> Res<(Option<u64>, Fingerprint)> {
        let ctx = self.ctx;
        let d = ctx.die(die)?;
        let size = udata(&d, c::DW_AT_byte_size);
        let mut fp = vec![("size".to_string(), size)];
        for m in ctx.members(die)? {
            if m.kind == Kind::Static {
                continue;
            }
            let tsize = m.ty.map(|t| ctx.size_of(t)).transpose()?.flatten();
            let opt = |v: Option<u64>| v.map_or("?".into(), |v| v.to_string());
            let name = m.name.as_deref().unwrap_or("(anon)");
            fp.push((format!("{name}@{}:{}", opt(m.bits), opt(m.bit_size)), tsize));
        }
        Ok((size, fp))
    }

    /// The complete definition(s) of a type name, grouped by layout.
    pub fn type_choice(&mut self, name: &str) -> Res<Option<std::rc::Rc<TypeChoice>>> {
        if let Some(t) = self.types.get(name) {
            return Ok(t.clone());
        }
        let ctx = self.ctx;
        let hits = self.matching(name, false);
        let mut defs: Vec<DieRef> = hits.iter().filter(|h| h.defined && h.tag != c::DW_TAG_typedef).map(|h| h.die).collect();
        if defs.is_empty() {
            // typedef struct {...} name_t; or a typedef of a complete type
            for h in hits.iter().filter(|h| h.tag == c::DW_TAG_typedef && !h.decl) {
                let s = ctx.strip(h.die)?;
                let complete = !flag(&s, c::DW_AT_declaration);
                if complete && (is_aggregate(s.e.tag) || s.e.tag == c::DW_TAG_enumeration_type) && !defs.contains(&s.at) {
                    defs.push(s.at);
                }
            }
        }
        let qname = hits.first().map_or(name.to_string(), |h| h.qname.clone());
        let choice = if defs.is_empty() {
            (!hits.is_empty()).then(|| TypeChoice { qname, variants: vec![] })
        } else {
            let mut groups: Vec<Variant> = Vec::new();
            for &die in defs.iter().take(self.odr_limit.max(1)) {
                let (size, fp) = ctx.quiet(|| self.fingerprint(die))?;
                match groups.iter_mut().find(|g| compatible(&g.fingerprint, &fp)) {
                    Some(g) => {
                        g.copies += 1;
                        // Represent the group by its most complete copy.
                        if known(&fp) > known(&g.fingerprint) {
                            (g.die, g.fingerprint) = (die, fp);
                        }
                    }
                    None => groups.push(Variant { die, size, copies: 1, fingerprint: fp }),
                }
            }
            // Stable: among equally common layouts the first in the file wins.
            groups.sort_by_key(|g| std::cmp::Reverse(g.copies));
            Some(TypeChoice { qname, variants: groups })
        };
        let choice = choice.map(std::rc::Rc::new);
        self.types.insert(name.to_string(), choice.clone());
        Ok(choice)
    }

    pub fn global(&self, name: &str) -> Res<Option<GlobalChoice>> {
        let ctx = self.ctx;
        let hits = self.matching(name, true);
        let rank = |h: &Hit| (!(h.defined && h.external), !h.defined, !h.external);
        let best = match hits.iter().min_by_key(|h| rank(h)) { Some(b) => b, None => return Ok(None) };
        let d = ctx.die(best.die)?;
        let mut ty = ctx.ref_attr(&d, c::DW_AT_type);
        if ty.is_none() {
            if let Some(spec) = ctx.ref_attr(&d, c::DW_AT_specification) {
                ty = ctx.ref_attr(&ctx.die(spec)?, c::DW_AT_type);
            }
        }
        let address = match d.e.attr_value(c::DW_AT_location) {
            Some(AttributeValue::Exprloc(e)) => {
                let b = e.0.slice();
                let n = ctx.address_size(&d) as usize;
                (b.len() == 1 + n && b[0] == c::DW_OP_addr.0).then(|| {
                    let bytes = &b[1..];
                    let it = bytes.iter().enumerate();
                    if ctx.d.le {
                        it.fold(0u64, |a, (i, &x)| a | u64::from(x) << (8 * i))
                    } else {
                        bytes.iter().fold(0u64, |a, &x| a << 8 | u64::from(x))
                    }
                })
            }
            _ => None,
        };
        Ok(Some(GlobalChoice {
            qname: best.qname.clone(),
            die: best.die,
            ty,
            defined: best.defined,
            external: best.external,
            address,
            definitions: hits.iter().filter(|h| h.defined).count(),
        }))
    }

    /// A path's root: a type name, else a global variable (through one pointer).
    pub fn root(&mut self, name: &str) -> Res<Option<Root>> {
        if let Some(v) = self.type_choice(name)?.and_then(|t| t.variants.first().map(|v| v.die)) {
            return Ok(Some(Root { agg: v, via_pointer: false }));
        }
        let g = match self.global(name)? { Some(g) => g, None => return Ok(None) };
        let ty = g.ty.ok_or_else(|| format!("global {name} has no type"))?;
        let s = self.ctx.strip(ty)?;
        if s.e.tag == c::DW_TAG_pointer_type {
            let p = self.ctx.ref_attr(&s, c::DW_AT_type).ok_or_else(|| format!("{name} is a void pointer"))?;
            return Ok(Some(Root { agg: self.ctx.strip(p)?.at, via_pointer: true }));
        }
        Ok(Some(Root { agg: s.at, via_pointer: false }))
    }

    /// A data member by name, looking through anonymous structs/unions and bases.
    pub fn find_member(&self, agg: DieRef, name: &str, depth: u32) -> Res<Option<Found>> {
        if depth > 16 {
            return Ok(None);
        }
        let ctx = self.ctx;
        let ms = ctx.members(agg)?;
        let mut nested = Vec::new();
        let mut virtual_base = None;
        for m in ms {
            if m.virtual_base {
                virtual_base = Some(ctx.type_name(m.ty));
            }
            if m.kind == Kind::Data && m.name.as_deref() == Some(name) {
                let bits = m.bits.ok_or_else(|| format!("member {name}: location not a constant"))?;
                return Ok(Some(Found { bits, m }));
            }
            if m.kind != Kind::Static && (m.kind == Kind::Base || m.name.is_none()) {
                nested.push(m);
            }
        }
        for m in nested {
            let (t, b) = match (m.ty, m.bits) { (Some(t), Some(b)) => (t, b), _ => continue };
            let s = ctx.strip(t)?;
            if is_aggregate(s.e.tag) {
                if let Some(mut f) = self.find_member(s.at, name, depth + 1)? {
                    f.bits += b;
                    return Ok(Some(f));
                }
            }
        }
        match virtual_base {
            Some(vb) => Err(format!("no member {name} here; virtual base {vb} has no constant offset")),
            None => Ok(None),
        }
    }

    /// Resolves member components ("a", "b[3]") from an aggregate type.
    pub fn path(&self, agg: DieRef, comps: &[&str]) -> Res<PathOut> {
        let ctx = self.ctx;
        let (mut bits, mut cur, mut bit_size) = (0u64, Some(agg), None);
        let mut done = String::new();
        for comp in comps {
            let (name, idx) = split_index(comp)?;
            let t = cur.ok_or_else(|| format!("{done} has no type"))?;
            let s = ctx.strip(t)?;
            if !is_aggregate(s.e.tag) {
                let what = if s.e.tag == c::DW_TAG_pointer_type { "a pointer (paths do not follow pointers)" } else { "not a struct/class/union" };
                return Err(format!("{done} is {what}: {}", ctx.type_name(Some(t))));
            }
            let f = self.find_member(s.at, name, 0)?.ok_or_else(|| format!("no member {name} in {}", ctx.type_name(Some(s.at))))?;
            bits += f.bits;
            bit_size = f.m.bit_size;
            cur = f.m.ty;
            for i in idx {
                let a = ctx.strip(cur.ok_or("no type")?)?;
                if a.e.tag != c::DW_TAG_array_type {
                    return Err(format!("{name} is not an array"));
                }
                let dims = ctx.dims(a.at)?;
                if dims.len() != 1 {
                    return Err(format!("{name}: multi-dimensional arrays are not indexed here"));
                }
                if dims[0].map_or(false, |n| i >= n && n > 0) {
                    return Err(format!("{name}[{i}] is out of bounds ({})", dims[0].unwrap_or(0)));
                }
                cur = ctx.ref_attr(&a, c::DW_AT_type);
                let stride = cur.map(|e| ctx.size_of(e)).transpose()?.flatten().ok_or("element size unknown")?;
                bits += i * stride * 8;
                bit_size = None;
            }
            done = if done.is_empty() { comp.to_string() } else { format!("{done}.{comp}") };
        }
        let size = match bit_size {
            Some(b) => Some(bytes_of_bits(bits % 8 + b)),
            None => cur.map(|t| ctx.size_of(t)).transpose()?.flatten(),
        };
        Ok(PathOut { bits, bit_size, size, ty: cur })
    }

    /// `T::NAME` as an enumerator of an enum nested in T that is not among T's
    /// children: in a class declaration (strict DWARF 2) or a type unit of its own.
    pub fn nested_enum_constant(&self, qname: &str, name: &str) -> Res<Option<(i128, Option<DieRef>)>> {
        let prefix = format!("{qname}::");
        for h in self.hits.iter().filter(|h| h.tag == c::DW_TAG_enumeration_type && h.qname.starts_with(&prefix)) {
            let e = self.ctx.strip(h.die)?;
            if e.e.tag == c::DW_TAG_enumeration_type {
                if let Some(v) = self.constant(e.at, name, 0)? {
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    }

    /// `T::NAME`: a static member with DW_AT_const_value, an enumerator of T (an enum),
    /// or of an enum nested in T (or in its bases). Returns (value, type DIE).
    pub fn constant(&self, agg: DieRef, name: &str, depth: u32) -> Res<Option<(i128, Option<DieRef>)>> {
        let ctx = self.ctx;
        let d = ctx.die(agg)?;
        let enum_of = |e: &Die<'a>, en: DieRef| -> Res<Option<(i128, Option<DieRef>)>> {
            for k in ctx.children(en)? {
                if k.e.tag == c::DW_TAG_enumerator && ctx.name(&k).as_deref() == Some(name) {
                    return Ok(ctx.const_value(&k, Some(e.at))?.map(|v| (v, Some(e.at))));
                }
            }
            Ok(None)
        };
        if d.e.tag == c::DW_TAG_enumeration_type {
            return enum_of(&d, agg);
        }
        let kids = ctx.children(agg)?;
        for k in &kids {
            let n = ctx.name(k);
            match k.e.tag {
                c::DW_TAG_member | c::DW_TAG_variable if n.as_deref() == Some(name) => {
                    let ty = ctx.ref_attr(k, c::DW_AT_type);
                    if let Some(v) = ctx.const_value(k, ty)? {
                        return Ok(Some((v, ty)));
                    }
                }
                c::DW_TAG_enumeration_type => {
                    let e = ctx.strip(k.at)?; // may be a type unit stub
                    if let Some(v) = enum_of(&e, e.at)? {
                        return Ok(Some(v));
                    }
                }
                _ => {}
            }
        }
        for k in kids.iter().filter(|k| k.e.tag == c::DW_TAG_inheritance && depth < 16) {
            if let Some(t) = ctx.ref_attr(k, c::DW_AT_type) {
                if let Some(v) = self.constant(ctx.strip(t)?.at, name, depth + 1)? {
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    }
}
