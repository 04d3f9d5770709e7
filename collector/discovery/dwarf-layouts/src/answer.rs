//! Turning the resolver's answers into the JSON document (see README.md, "Output").

use crate::dwarf::{Ctx, DieRef, Res};
use crate::json::J;
use crate::layout;
use crate::query::Resolver;
use crate::scan;
use crate::Args;
use gimli::constants as c;
use std::collections::BTreeSet;

fn member_json(r: &Resolver, bits: u64, bit_size: Option<u64>, size: Option<u64>, ty: Option<DieRef>, full: bool) -> J {
    let mut o = J::obj();
    o.set("offset", J::Int((bits / 8).into()));
    o.set("size", J::opt_int(size));
    o.set("type", J::Str(r.ctx.type_name(ty)));
    if full || bit_size.is_some() {
        o.set("bit_offset", J::Int(bits.into()));
        o.set("bit_size", J::opt_int(bit_size.or(size.map(|s| s * 8))));
        o.set("bitfield", J::Bool(bit_size.is_some()));
    }
    o
}

/// The "types" entry: size, layouts found, direct and inherited data members.
fn type_json(r: &mut Resolver, name: &str) -> Res<Option<J>> {
    let tc = match r.type_choice(name)? { Some(tc) => tc, None => return Ok(None) };
    let mut o = J::obj();
    o.set("name", J::Str(tc.qname.clone()));
    let v = match tc.variants.first() {
        Some(v) => v,
        None => {
            o.set("error", J::Str("only declarations (no complete definition)".into()));
            return Ok(Some(o));
        }
    };
    o.set("size", J::opt_int(v.size));
    o.set("copies", J::Int(tc.variants.iter().map(|v| v.copies as i128).sum()));
    if tc.variants.len() > 1 {
        let mut arr = J::Arr(vec![]);
        for v in &tc.variants {
            let mut e = J::obj();
            e.set("size", J::opt_int(v.size));
            e.set("copies", J::Int(v.copies as i128));
            e.set("unit", r.ctx.unit_name(v.die).map_or(J::Null, J::Str));
            e.set("die", J::Str(format!("{:#x}", v.die.off)));
            if !std::ptr::eq(v, &tc.variants[0]) {
                e.set("differs", J::Str(v.differs_from(&tc.variants[0])));
            }
            arr.push(e);
        }
        o.set("odr_conflict", arr);
    }
    let mut flat = Vec::new();
    r.flatten(v.die, "", 0, 0, 1, &mut flat)?;
    let mut members = J::obj();
    for e in &flat {
        members.set(e.path.trim_start_matches('.'), member_json(r, e.bits, e.bit_size, e.size, e.ty, false));
    }
    let mut bases = J::Arr(vec![]);
    for m in r.ctx.members(v.die)?.iter().filter(|m| m.kind == layout::Kind::Base) {
        let mut b = J::obj();
        b.set("type", J::Str(r.ctx.type_name(m.ty)));
        b.set("offset", J::opt_int(m.bits.map(|b| b / 8)));
        bases.push(b);
    }
    o.set("bases", bases);
    o.set("members", members);
    Ok(Some(o))
}

fn global_json(r: &Resolver, name: &str) -> Res<Option<J>> {
    let g = match r.global(name)? { Some(g) => g, None => return Ok(None) };
    let ctx = r.ctx;
    let mut o = J::obj();
    o.set("name", J::Str(g.qname.clone()));
    o.set("type", J::Str(ctx.type_name(g.ty)));
    let stripped = g.ty.map(|t| ctx.strip(t)).transpose()?;
    let pointer = stripped.as_ref().map_or(false, |s| s.e.tag == c::DW_TAG_pointer_type);
    o.set("pointer", J::Bool(pointer));
    o.set("size", J::opt_int(g.ty.map(|t| ctx.size_of(t)).transpose()?.flatten()));
    let obj = match (&stripped, pointer) {
        (Some(s), true) => ctx.ref_attr(s, c::DW_AT_type),
        _ => g.ty,
    };
    o.set("object_type", J::Str(ctx.type_name(obj)));
    o.set("object_size", J::opt_int(obj.map(|t| ctx.size_of(t)).transpose()?.flatten()));
    o.set("address", J::opt_int(g.address));
    o.set("defined", J::Bool(g.defined));
    o.set("external", J::Bool(g.external));
    o.set("definitions", J::Int(g.definitions as i128));
    o.set("die", J::Str(format!("{:#x}", g.die.off)));
    Ok(Some(o))
}

/// Answers every query from the scan's hits; the parts of the output that depend on
/// them: types, paths, constants, globals, flatten, at, missing.
pub fn answer(a: &Args, ctx: &Ctx, hits: &[scan::Hit]) -> Res<J> {
    let mut r = Resolver::new(ctx, hits, a.odr_limit);
    let (mut types, mut paths, mut consts, mut globals) = (J::obj(), J::obj(), J::obj(), J::obj());
    let mut missing = J::Arr(vec![]);
    let mut miss = |q: &str, why: String| {
        let mut m = J::obj();
        m.set("query", J::Str(q.into()));
        m.set("reason", J::Str(why));
        missing.push(m);
    };
    let mut type_roots = BTreeSet::new();
    for q in &a.queries {
        // "g->m" (as flatten and at write a pointer global's members) means "g.m"
        let norm = q.replacen("->", ".", 1);
        if let Some((root, rest)) = norm.split_once('.') {
            let comps: Vec<&str> = rest.split('.').collect();
            match r.root(root) {
                Ok(Some(rt)) => match r.path(rt.agg, &comps) {
                    Ok(p) => {
                        let mut o = member_json(&r, p.bits, p.bit_size, p.size, p.ty, true);
                        if rt.via_pointer {
                            o.set("via_pointer", J::Bool(true));
                        }
                        paths.set(q, o);
                        type_roots.insert(root.to_string());
                    }
                    Err(e) => miss(q, e),
                },
                Ok(None) => miss(q, format!("no type or global named {root}")),
                Err(e) => miss(q, e),
            }
            continue;
        }
        let mut found = false;
        let mut why = "no global, type or constant of that name".to_string();
        // A constant `T::NAME`, when T is a type with a complete definition.
        let constant_of = match q.rsplit_once("::") {
            Some((ty, name)) => {
                let tc = r.type_choice(ty)?;
                tc.and_then(|tc| tc.variants.first().map(|v| (ty, name, v.die, tc.qname.clone())))
            }
            None => None,
        };
        if let Some((ty, name, die, tc_qname)) = constant_of {
            why = format!("{ty} has no static const member or enumerator {name}");
            let mut val = r.constant(die, name, 0)?;
            if val.is_none() {
                val = r.nested_enum_constant(&tc_qname, name)?;
            }
            if let Some((val, vty)) = val {
                let mut o = J::obj();
                o.set("value", J::Int(val));
                o.set("hex", J::Str(if val < 0 { format!("-{:#x}", -val) } else { format!("{val:#x}") }));
                o.set("type", J::Str(ctx.type_name(vty)));
                consts.set(q, o);
                type_roots.insert(ty.to_string());
                continue;
            }
        }
        if let Some(g) = global_json(&r, q)? {
            globals.set(q, g);
            found = true;
        }
        if let Some(t) = type_json(&mut r, q)? {
            types.set(q, t);
            found = true;
        }
        if !found {
            miss(q, why);
        }
    }
    for root in &type_roots {
        if let Some(t) = type_json(&mut r, root)? {
            types.set(root, t);
        }
    }
    let mut flat_out = J::obj();
    for name in &a.flatten {
        let rt = match r.root(name)? {
            Some(rt) => rt,
            None => {
                miss(&format!("--flatten {name}"), "no type or global of that name".into());
                continue;
            }
        };
        let mut flat = Vec::new();
        let sep = if rt.via_pointer { "->" } else { "." };
        r.flatten(rt.agg, name, 0, 0, a.depth.max(1), &mut flat)?;
        let mut arr = J::Arr(vec![]);
        for e in flat {
            let mut o = J::obj();
            let path = e.path.replacen(&format!("{name}."), &format!("{name}{sep}"), 1);
            o.set("path", J::Str(path));
            if let J::Obj(kv) = member_json(&r, e.bits, e.bit_size, e.size, e.ty, false) {
                kv.into_iter().for_each(|(k, v)| o.set(&k, v));
            }
            if e.count.is_some() || e.stride.is_some() {
                o.set("count", J::opt_int(e.count));
                o.set("stride", J::opt_int(e.stride));
            }
            arr.push(o);
        }
        let mut fo = J::obj();
        fo.set("type", J::Str(ctx.type_name(Some(rt.agg))));
        fo.set("size", J::opt_int(ctx.size_of(rt.agg)?));
        fo.set("via_pointer", J::Bool(rt.via_pointer));
        fo.set("members", arr);
        flat_out.set(name, fo);
    }
    let mut at_out = J::obj();
    for (name, off) in &a.at {
        let key = format!("{name}+{off}");
        let rt = match r.root(name)? {
            Some(rt) => rt,
            None => {
                miss(&format!("--at {key}"), "no type or global of that name".into());
                continue;
            }
        };
        let at = r.name_at(rt.agg, name, *off)?;
        let mut o = J::obj();
        let sep = if rt.via_pointer { "->" } else { "." };
        o.set("path", J::Str(at.path.replacen(&format!("{name}."), &format!("{name}{sep}"), 1)));
        o.set("offset", J::Int((at.bits / 8).into()));
        o.set("size", J::opt_int(at.size_bits.map(layout::bytes_of_bits)));
        o.set("type", J::Str(ctx.type_name(at.ty)));
        o.set("delta", J::Int(at.delta.into()));
        let mut ch = J::Arr(vec![]);
        for (p, bits, sz, ty) in &at.chain {
            let mut e = J::obj();
            e.set("path", J::Str(p.replacen(&format!("{name}."), &format!("{name}{sep}"), 1)));
            e.set("offset", J::Int((bits / 8).into()));
            e.set("size", J::opt_int(sz.map(layout::bytes_of_bits)));
            e.set("type", J::Str(ctx.type_name(*ty)));
            ch.push(e);
        }
        o.set("chain", ch);
        at_out.set(&key, o);
    }
    let mut out = J::obj();
    for (k, v) in [("types", types), ("paths", paths), ("constants", consts), ("globals", globals)] {
        out.set(k, v);
    }
    if !a.flatten.is_empty() {
        out.set("flatten", flat_out);
    }
    if !a.at.is_empty() {
        out.set("at", at_out);
    }
    out.set("missing", missing);
    Ok(out)
}
