//! Random access to DIEs by section offset, shared by the scan and the layout code.
//!
//! A DIE is named by `DieRef` (section + offset), so a reference of any form
//! (DW_FORM_ref*, DW_FORM_ref_addr, DW_FORM_ref_sig8) can be followed without holding
//! a parsed unit. Units are found by binary search over their headers; a unit's
//! abbreviations are parsed the first time one of its DIEs is read and kept.

use gimli::{
    Attribute, AttributeValue, DebugAbbrev, DebugInfo, DebugLineStr, DebugStr, DebugStrOffsets,
    DebugStrOffsetsBase, DebugTypes, DebuggingInformationEntry, DwAt, DwTag, EndianSlice, RunTimeEndian,
    UnitHeader, UnitOffset, UnitSectionOffset, UnitType,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

pub type R<'a> = EndianSlice<'a, RunTimeEndian>;
pub type Res<T> = Result<T, String>;

/// A DIE's tag, offset and attributes, parsed once. gimli 0.32's entries borrow the
/// unit's abbreviations, which `Ctx` keeps behind an `Rc` that a returned `Die` cannot
/// borrow from; so a `Die` owns its attributes (as gimli 0.33+'s entries do).
pub struct Entry<'a> {
    pub tag: DwTag,
    pub offset: UnitOffset<usize>,
    attrs: Vec<Attribute<R<'a>>>,
}

impl<'a> Entry<'a> {
    fn parse(e: &DebuggingInformationEntry<'_, '_, R<'a>>) -> Res<Self> {
        let mut attrs = Vec::new();
        let mut it = e.attrs();
        while let Some(a) = it.next().map_err(err)? {
            attrs.push(a);
        }
        Ok(Entry { tag: e.tag(), offset: e.offset(), attrs })
    }

    /// The first attribute of that name.
    pub fn attr(&self, at: DwAt) -> Option<&Attribute<R<'a>>> {
        self.attrs.iter().find(|a| a.name() == at)
    }

    /// Its normalized value (gimli's `Attribute::value`).
    pub fn attr_value(&self, at: DwAt) -> Option<AttributeValue<R<'a>>> {
        self.attr(at).map(|a| a.value())
    }
}

pub fn err(e: gimli::Error) -> String {
    format!("DWARF: {e}")
}

/// A DIE by section offset: in .debug_info, or in .debug_types (DWARF 4 type units).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct DieRef {
    pub types: bool,
    pub off: usize,
}

pub struct Dwarf<'a> {
    pub abbrev: DebugAbbrev<R<'a>>,
    pub str_: DebugStr<R<'a>>,
    pub str_offsets: DebugStrOffsets<R<'a>>,
    pub line_str: DebugLineStr<R<'a>>,
    /// Units of .debug_info, then of .debug_types, each part in section order.
    pub units: Vec<UnitHeader<R<'a>>>,
    pub n_info: usize,
    /// Type signature -> the type unit's type DIE (DW_FORM_ref_sig8 targets).
    pub sigs: HashMap<u64, DieRef>,
    /// Byte order, for DWARF 2/3 bit offsets (counted from the MSB).
    pub le: bool,
}

/// Section offset of a unit (in .debug_info or .debug_types, as the unit says).
pub fn unit_start(h: &UnitHeader<R>) -> usize {
    match h.offset() {
        UnitSectionOffset::DebugInfoOffset(o) => o.0,
        UnitSectionOffset::DebugTypesOffset(o) => o.0,
    }
}

impl<'a> Dwarf<'a> {
    pub fn new(s: &'a crate::load::Sections<'a>) -> Res<Self> {
        let e = if s.little_endian { RunTimeEndian::Little } else { RunTimeEndian::Big };
        let info = DebugInfo::new(&s.info, e);
        let types = DebugTypes::new(&s.types, e);
        let mut units = Vec::new();
        let mut it = info.units();
        while let Some(h) = it.next().map_err(err)? {
            units.push(h);
        }
        let n_info = units.len();
        let mut it = types.units();
        while let Some(h) = it.next().map_err(err)? {
            units.push(h);
        }
        let mut sigs = HashMap::new();
        for (i, h) in units.iter().enumerate() {
            if let UnitType::Type { type_signature, type_offset } = h.type_() {
                sigs.insert(type_signature.0, DieRef { types: i >= n_info, off: unit_start(h) + type_offset.0 });
            }
        }
        Ok(Dwarf {
            abbrev: DebugAbbrev::new(&s.abbrev, e),
            str_: DebugStr::new(&s.str_, e),
            str_offsets: DebugStrOffsets::from(EndianSlice::new(&s.str_offsets, e)),
            line_str: DebugLineStr::from(EndianSlice::new(&s.line_str, e)),
            units,
            n_info,
            sigs,
            le: s.little_endian,
        })
    }

    /// Index of the unit holding `r`.
    pub fn unit_of(&self, r: DieRef) -> Option<usize> {
        let (lo, hi) = if r.types { (self.n_info, self.units.len()) } else { (0, self.n_info) };
        let part = &self.units[lo..hi];
        let i = part.partition_point(|h| unit_start(h) <= r.off).checked_sub(1)?;
        let h = &part[i];
        (r.off < unit_start(h) + h.length_including_self()).then_some(lo + i)
    }

    /// A string attribute's bytes, whatever its form.
    pub fn str_of(&self, v: AttributeValue<R<'a>>, h: &UnitHeader<R<'a>>, base: DebugStrOffsetsBase<usize>) -> Option<&'a [u8]> {
        let s = match v {
            AttributeValue::String(s) => s,
            AttributeValue::DebugStrRef(o) => self.str_.get_str(o).ok()?,
            AttributeValue::DebugLineStrRef(o) => self.line_str.get_str(o).ok()?,
            AttributeValue::DebugStrOffsetsIndex(i) => {
                let o = self.str_offsets.get_str_offset(h.format(), base, i).ok()?;
                self.str_.get_str(o).ok()?
            }
            _ => return None,
        };
        Some(s.slice())
    }

    /// A reference attribute as a DieRef; None for other forms and for references
    /// into a dwz supplementary file (DW_FORM_GNU_ref_alt / ref_sup), not read here.
    pub fn reference(&self, unit: usize, v: AttributeValue<R<'a>>) -> Option<DieRef> {
        match v {
            AttributeValue::UnitRef(o) => {
                Some(DieRef { types: unit >= self.n_info, off: unit_start(&self.units[unit]) + o.0 })
            }
            AttributeValue::DebugInfoRef(o) => Some(DieRef { types: false, off: o.0 }),
            AttributeValue::DebugTypesRef(sig) => self.sigs.get(&sig.0).copied(),
            _ => None,
        }
    }
}

/// The unit offset of the unit's root DIE: just past the header.
pub fn root_offset(h: &UnitHeader<R>) -> UnitOffset<usize> {
    UnitOffset(h.header_size())
}

pub fn default_str_base(h: &UnitHeader<R>) -> DebugStrOffsetsBase<usize> {
    DebugStrOffsetsBase::default_for_encoding_and_file(h.encoding(), gimli::DwarfFileType::Main)
}

/// A DIE read at random, with the unit it belongs to.
pub struct Die<'a> {
    pub at: DieRef,
    pub unit: usize,
    pub e: Entry<'a>,
}

/// The single-threaded reader used after the scan: caches abbreviations and
/// string-offset bases per unit.
pub struct Ctx<'a> {
    pub d: &'a Dwarf<'a>,
    abbrevs: RefCell<HashMap<usize, Rc<gimli::Abbreviations>>>,
    bases: RefCell<HashMap<usize, DebugStrOffsetsBase<usize>>>,
    /// Complete definitions of classes that some unit knows only by declaration,
    /// by name, found by a second scan for the names in `incomplete`.
    pub completions: RefCell<HashMap<String, DieRef>>,
    pub incomplete: RefCell<std::collections::BTreeSet<String>>,
    /// Set while comparing copies of a type: their declarations need no completion.
    quiet: std::cell::Cell<bool>,
}

impl<'a> Ctx<'a> {
    pub fn new(d: &'a Dwarf<'a>) -> Self {
        Ctx {
            d,
            abbrevs: RefCell::new(HashMap::new()),
            bases: RefCell::new(HashMap::new()),
            completions: RefCell::new(HashMap::new()),
            incomplete: RefCell::new(Default::default()),
            quiet: std::cell::Cell::new(false),
        }
    }

    /// The completion of a declared class, or None (then noted, unless quiet).
    pub fn completion(&self, name: &str) -> Option<DieRef> {
        let found = self.completions.borrow().get(name).copied();
        if found.is_none() && !self.quiet.get() {
            self.incomplete.borrow_mut().insert(name.to_string());
        }
        found
    }

    pub fn quiet<T>(&self, f: impl FnOnce() -> T) -> T {
        let before = self.quiet.replace(true);
        let out = f();
        self.quiet.set(before);
        out
    }

    fn abbrevs(&self, unit: usize) -> Res<Rc<gimli::Abbreviations>> {
        let h = &self.d.units[unit];
        let key = h.debug_abbrev_offset().0;
        if let Some(a) = self.abbrevs.borrow().get(&key) {
            return Ok(a.clone());
        }
        let a = Rc::new(h.abbreviations(&self.d.abbrev).map_err(err)?);
        self.abbrevs.borrow_mut().insert(key, a.clone());
        Ok(a)
    }

    fn locate(&self, r: DieRef) -> Res<(usize, UnitOffset<usize>)> {
        let u = self.d.unit_of(r).ok_or_else(|| format!("no unit holds DIE {:#x}", r.off))?;
        Ok((u, UnitOffset(r.off - unit_start(&self.d.units[u]))))
    }

    pub fn die(&self, r: DieRef) -> Res<Die<'a>> {
        let (unit, uo) = self.locate(r)?;
        let ab = self.abbrevs(unit)?;
        let e = Entry::parse(&self.d.units[unit].entry(&ab, uo).map_err(err)?)?;
        Ok(Die { at: r, unit, e })
    }

    /// The DIE's children (not grandchildren), in order.
    pub fn children(&self, r: DieRef) -> Res<Vec<Die<'a>>> {
        let (unit, uo) = self.locate(r)?;
        let ab = self.abbrevs(unit)?;
        let h = &self.d.units[unit];
        let start = unit_start(h);
        let mut tree = h.entries_tree(&ab, Some(uo)).map_err(err)?;
        let root = tree.root().map_err(err)?;
        let mut it = root.children();
        let mut out = Vec::new();
        while let Some(child) = it.next().map_err(err)? {
            let e = Entry::parse(child.entry())?;
            out.push(Die { at: DieRef { types: r.types, off: start + e.offset.0 }, unit, e });
        }
        Ok(out)
    }

    fn str_base(&self, unit: usize) -> DebugStrOffsetsBase<usize> {
        if let Some(b) = self.bases.borrow().get(&unit) {
            return *b;
        }
        let h = &self.d.units[unit];
        let mut base = default_str_base(h);
        let root_attr = self.abbrevs(unit).ok().and_then(|ab| {
            let root = h.entry(&ab, root_offset(h)).ok()?;
            root.attr_value(gimli::DW_AT_str_offsets_base).ok().flatten()
        });
        if let Some(AttributeValue::DebugStrOffsetsBase(b)) = root_attr {
            base = b;
        }
        self.bases.borrow_mut().insert(unit, base);
        base
    }

    pub fn name(&self, d: &Die<'a>) -> Option<String> {
        let v = d.e.attr_value(gimli::DW_AT_name)?;
        let b = self.d.str_of(v, &self.d.units[d.unit], self.str_base(d.unit))?;
        Some(String::from_utf8_lossy(b).into_owned())
    }

    pub fn ref_attr(&self, d: &Die<'a>, at: DwAt) -> Option<DieRef> {
        self.d.reference(d.unit, d.e.attr_value(at)?)
    }

    pub fn address_size(&self, d: &Die<'a>) -> u64 {
        u64::from(self.d.units[d.unit].address_size())
    }

    /// The DW_AT_name of the unit holding `r` (its main source file), for reports.
    pub fn unit_name(&self, r: DieRef) -> Option<String> {
        let (unit, _) = self.locate(r).ok()?;
        let h = &self.d.units[unit];
        let root = self.die(DieRef { types: r.types, off: unit_start(h) + root_offset(h).0 }).ok()?;
        self.name(&root)
    }
}

pub fn flag(d: &Die, at: DwAt) -> bool {
    matches!(d.e.attr_value(at), Some(AttributeValue::Flag(true)))
}

pub fn udata(d: &Die, at: DwAt) -> Option<u64> {
    d.e.attr(at)?.udata_value()
}
