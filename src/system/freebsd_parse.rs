//! FreeBSD's answers, as text, turned into kbench's types: sysctl values
//! as sysctl(8) prints them, the scheduler's CPU topology
//! (`kern.sched.topology_spec`), frequency levels, CPU time counters.
//!
//! Plain functions of strings and bytes, so they compile and are tested on
//! every OS: the tests feed them real outputs quoted from FreeBSD's manual
//! pages and from reports of real FreeBSD machines (`testdata/freebsd/`,
//! each file naming its source). `freebsd.rs` reads the values with
//! sysctl(3) and hands them here.

use indexmap::IndexMap;

use super::{CpuTopo, Fingerprint};
use crate::units::CpuSet;

// sys/sysctl.h: the type in the low bits of a sysctl's kind.
const CTLTYPE: u32 = 0xf;
const CTLTYPE_INT: u32 = 2;
const CTLTYPE_STRING: u32 = 3;
const CTLTYPE_S64: u32 = 4;
const CTLTYPE_OPAQUE: u32 = 5;
const CTLTYPE_UINT: u32 = 6;
const CTLTYPE_LONG: u32 = 7;
const CTLTYPE_ULONG: u32 = 8;
const CTLTYPE_U64: u32 = 9;
const CTLTYPE_U8: u32 = 0xa;
const CTLTYPE_U16: u32 = 0xb;
const CTLTYPE_S8: u32 = 0xc;
const CTLTYPE_S16: u32 = 0xd;
const CTLTYPE_S32: u32 = 0xe;
const CTLTYPE_U32: u32 = 0xf;

/// A sysctl's value as `sysctl -n` prints it, from the raw bytes sysctl(3)
/// returned and the kind and format the kernel reports for it
/// (`CTL_SYSCTL_OIDFMT`): integers in decimal (arrays space-separated),
/// strings as they are, `struct timeval` as `{ sec = S, usec = U }`.
/// `None` for nodes and structures kbench does not decode. Integers are
/// native-endian, as the running kernel wrote them.
pub fn format_value(kind: u32, fmt: &str, raw: &[u8]) -> Option<String> {
    fn ints<const N: usize>(raw: &[u8], f: impl Fn([u8; N]) -> String) -> Option<String> {
        if raw.is_empty() || !raw.len().is_multiple_of(N) {
            return None;
        }
        let v: Vec<String> = raw
            .chunks_exact(N)
            .map(|c| f(c.try_into().expect("chunk of N")))
            .collect();
        Some(v.join(" "))
    }
    let long = std::mem::size_of::<std::ffi::c_long>();
    match kind & CTLTYPE {
        CTLTYPE_STRING => {
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            Some(String::from_utf8_lossy(&raw[..end]).into_owned())
        }
        CTLTYPE_INT | CTLTYPE_S32 => ints(raw, |b| i32::from_ne_bytes(b).to_string()),
        CTLTYPE_UINT | CTLTYPE_U32 => ints(raw, |b| u32::from_ne_bytes(b).to_string()),
        CTLTYPE_S64 => ints(raw, |b| i64::from_ne_bytes(b).to_string()),
        CTLTYPE_U64 => ints(raw, |b| u64::from_ne_bytes(b).to_string()),
        CTLTYPE_LONG if long == 8 => ints(raw, |b| i64::from_ne_bytes(b).to_string()),
        CTLTYPE_ULONG if long == 8 => ints(raw, |b| u64::from_ne_bytes(b).to_string()),
        CTLTYPE_LONG => ints(raw, |b| i32::from_ne_bytes(b).to_string()),
        CTLTYPE_ULONG => ints(raw, |b| u32::from_ne_bytes(b).to_string()),
        CTLTYPE_U8 => ints(raw, |b: [u8; 1]| b[0].to_string()),
        CTLTYPE_S8 => ints(raw, |b: [u8; 1]| (b[0] as i8).to_string()),
        CTLTYPE_U16 => ints(raw, |b| u16::from_ne_bytes(b).to_string()),
        CTLTYPE_S16 => ints(raw, |b| i16::from_ne_bytes(b).to_string()),
        CTLTYPE_OPAQUE if fmt == "S,timeval" && raw.len() == 2 * long => {
            let (s, u) = raw.split_at(long);
            let n = |b: &[u8]| -> i64 {
                if long == 8 {
                    i64::from_ne_bytes(b.try_into().expect("8 bytes"))
                } else {
                    i32::from_ne_bytes(b.try_into().expect("4 bytes")).into()
                }
            };
            Some(format!("{{ sec = {}, usec = {} }}", n(s), n(u)))
        }
        _ => None,
    }
}

/// `name: value` lines as `sysctl NAME...` prints them; a line without
/// `: ` continues the value above it (the topology XML spans lines).
#[cfg(test)]
pub fn parse_listing(text: &str) -> IndexMap<String, String> {
    let mut m: IndexMap<String, String> = IndexMap::new();
    let mut last: Option<String> = None;
    for line in text.lines() {
        let head = line.split_once(": ").filter(|(k, _)| {
            !k.is_empty() && !k.contains(char::is_whitespace) && !k.starts_with('<')
        });
        match (head, &last) {
            (Some((k, v)), _) => {
                m.insert(k.to_string(), v.to_string());
                last = Some(k.to_string());
            }
            (None, Some(k)) => {
                let v = m.get_mut(k).expect("inserted above");
                v.push('\n');
                v.push_str(line);
            }
            (None, None) => {}
        }
    }
    m
}

/// One `<group>` of `kern.sched.topology_spec` (smp(4)): CPUs the
/// scheduler considers close, what they share, and the groups inside.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub level: u32,
    /// The cache level the group's CPUs share (0: none).
    pub cache_level: u32,
    pub cpus: Vec<usize>,
    /// `THREAD`, `SMT`, `HTT` (hardware threads of one core), `NODE` (a
    /// NUMA domain).
    pub flags: Vec<String>,
    pub children: Vec<Group>,
}

impl Group {
    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Hardware threads of one core.
    fn is_core(&self) -> bool {
        self.children.is_empty() && (self.has("THREAD") || self.has("SMT") || self.has("HTT"))
    }

    /// This group and every group inside it, outermost first.
    fn walk<'a>(&'a self, depth: usize, out: &mut Vec<(usize, &'a Group)>) {
        out.push((depth, self));
        for c in &self.children {
            c.walk(depth + 1, out);
        }
    }
}

/// The top-level groups of a `kern.sched.topology_spec` text.
pub fn parse_topology_spec(xml: &str) -> Result<Vec<Group>, String> {
    // The sysctl's buffer may end in NUL padding.
    let xml = xml.trim_end_matches(['\0', '\n', ' ']);
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("topology_spec: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "groups" {
        return Err(format!(
            "topology_spec: <{}> where <groups> was expected",
            root.tag_name().name()
        ));
    }
    root.children()
        .filter(|n| n.has_tag_name("group"))
        .map(group)
        .collect()
}

fn group(n: roxmltree::Node) -> Result<Group, String> {
    let num = |a: &str| -> Result<u32, String> {
        n.attribute(a)
            .unwrap_or("0")
            .parse()
            .map_err(|_| format!("topology_spec: {a}=\"{}\"", n.attribute(a).unwrap_or("")))
    };
    let mut g = Group {
        level: num("level")?,
        cache_level: num("cache-level")?,
        cpus: Vec::new(),
        flags: Vec::new(),
        children: Vec::new(),
    };
    for c in n.children().filter(|c| c.is_element()) {
        match c.tag_name().name() {
            "cpu" => {
                let list = c.text().unwrap_or("");
                g.cpus = list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().map_err(|_| format!("topology_spec: cpu `{s}`")))
                    .collect::<Result<_, _>>()?;
            }
            "flags" => {
                g.flags = c
                    .children()
                    .filter(|f| f.has_tag_name("flag"))
                    .filter_map(|f| f.attribute("name").map(String::from))
                    .collect();
            }
            "children" => {
                g.children = c
                    .children()
                    .filter(|k| k.has_tag_name("group"))
                    .map(group)
                    .collect::<Result<_, _>>()?;
            }
            _ => {}
        }
    }
    Ok(g)
}

/// The machine's shape from its topology groups: package, core and SMT
/// thread of each CPU of `cpus`, and the counts of packages, cores and
/// NUMA nodes.
///
/// - A core is a group flagged THREAD, SMT or HTT with no groups inside;
///   a CPU in none is a core of its own. Its hardware threads are
///   numbered in the group's order.
/// - A package is a NUMA node (NODE), else a group below the whole
///   machine that shares no cache (cache-level 0: smp(4)'s two quad-core
///   processors). The scheduler names no sockets, and a group sharing an
///   L3 may be one chiplet of a package (AMD's CCX), so without either
///   everything is package 0.
pub struct Shape {
    pub cpus: Vec<CpuTopo>,
    pub packages: usize,
    pub cores: usize,
    pub numa_nodes: usize,
}

pub fn shape(groups: &[Group], cpus: &CpuSet) -> Shape {
    let mut all = Vec::new();
    for g in groups {
        g.walk(0, &mut all);
    }
    let nodes: Vec<&Group> = all.iter().map(|x| x.1).filter(|g| g.has("NODE")).collect();
    let packages: Vec<&Group> = if nodes.is_empty() {
        all.iter()
            .filter(|(depth, g)| *depth > 0 && g.cache_level == 0 && !g.is_core())
            .map(|x| x.1)
            .collect()
    } else {
        nodes.clone()
    };
    let cores: Vec<&Group> = all.iter().map(|x| x.1).filter(|g| g.is_core()).collect();
    let mut loose = 0;
    let topo: Vec<CpuTopo> = cpus
        .0
        .iter()
        .map(|&cpu| {
            let package = packages
                .iter()
                .position(|g| g.cpus.contains(&cpu))
                .unwrap_or(0);
            let (core, thread) = match cores.iter().position(|g| g.cpus.contains(&cpu)) {
                Some(i) => (i, cores[i].cpus.iter().position(|&c| c == cpu).unwrap_or(0)),
                None => {
                    loose += 1;
                    (cores.len() + loose - 1, 0)
                }
            };
            CpuTopo {
                cpu,
                package,
                core,
                thread,
            }
        })
        .collect();
    let used_cores = {
        let mut c: Vec<usize> = topo.iter().map(|t| t.core).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    let used_packages = {
        let mut p: Vec<usize> = topo.iter().map(|t| t.package).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    };
    Shape {
        cpus: topo,
        packages: used_packages.max(1),
        cores: used_cores.max(1),
        numa_nodes: nodes.len().max(1),
    }
}

/// Every CPU the topology names, in order.
pub fn topology_cpus(groups: &[Group]) -> CpuSet {
    let mut v: Vec<usize> = groups.iter().flat_map(|g| g.cpus.clone()).collect();
    v.sort_unstable();
    v.dedup();
    CpuSet(v)
}

/// The highest frequency of `dev.cpu.N.freq_levels` (`MHz/mW ...`, the
/// power `-1` where unknown), in MHz. A turbo level is listed as the base
/// clock plus one MHz (cpufreq(4)); the turbo clock itself is not known.
pub fn max_freq_mhz(levels: &str) -> Option<u32> {
    levels
        .split_whitespace()
        .filter_map(|l| l.split('/').next()?.parse::<u32>().ok())
        .max()
}

/// The machine's (busy, idle) ticks from `kern.cp_time` (user, nice,
/// system, interrupt, idle; as runtest.py counts Linux's: idle is idle,
/// the rest busy).
pub fn cp_time_ticks(cp_time: &str) -> Option<(u64, u64)> {
    let v: Vec<u64> = cp_time
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // kern.cp_time holds CPUSTATES (5) counters; kern.cp_times 5 per CPU.
    if v.len() != 5 {
        return None;
    }
    Some((v[0] + v[1] + v[2] + v[3], v[4]))
}

/// Per-CPU (busy, total) ticks from `kern.cp_times` (`kern.cp_time`'s
/// five counters for every CPU in turn).
pub fn cp_times(text: &str) -> Vec<(u64, u64)> {
    let v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    v.chunks_exact(5)
        .map(|c| (c[0] + c[1] + c[2] + c[3], c.iter().sum()))
        .collect()
}

/// The microcode revision in a CPU's `MSR_BIOS_SIGN` (0x8b), as Linux
/// prints it: Intel keeps it in the high half, AMD's patch level is the
/// low half.
pub fn microcode_revision(vendor: &str, msr: u64) -> String {
    let rev = if vendor == "GenuineIntel" {
        msr >> 32
    } else {
        msr & 0xffff_ffff
    };
    format!("{rev:#x}")
}

/// The mitigation sysctls a FreeBSD fingerprint records, where the kernel
/// has them (the names changed between releases).
pub const MITIGATIONS: &[&str] = &[
    "vm.pmap.pti",
    "vm.pmap.pcid_enabled",
    "vm.pmap.invpcid_works",
    "hw.ibrs_active",
    "hw.spec_store_bypass_disable_active",
    "hw.mds_disable_state",
    "machdep.mitigations.mds.state",
    "machdep.mitigations.taa.state",
    "machdep.mitigations.rngds.state",
    "machdep.mitigations.zenbleed.state",
];

/// `vm.pmap.pg_ps_enabled` (superpage promotion) in the words of Linux's
/// transparent huge pages, so a `thp` probe means the same everywhere.
pub fn thp_word(pg_ps_enabled: &str) -> &'static str {
    if pg_ps_enabled.trim() == "0" {
        "never"
    } else {
        "always"
    }
}

/// `machdep.hyperthreading_allowed` in the words of Linux's SMT control.
pub fn smt_word(allowed: &str) -> &'static str {
    if allowed.trim() == "0" { "off" } else { "on" }
}

/// Everything of a FreeBSD fingerprint that sysctls say, from `get` (a
/// sysctl's value as sysctl(8) prints it). The CPUs of `online` are the
/// ones described.
pub fn fingerprint(get: &dyn Fn(&str) -> Option<String>, online: &CpuSet) -> Fingerprint {
    let mut fp = Fingerprint {
        os: get("kern.ostype").unwrap_or_else(|| "FreeBSD".into()),
        kernel_release: get("kern.osrelease").unwrap_or_default(),
        // kern.version ends with the build's directory on a second line.
        kernel_version: get("kern.version")
            .and_then(|v| v.lines().next().map(|l| l.trim().to_string()))
            .unwrap_or_default(),
        cpu_model: get("hw.model").map(|m| m.trim().to_string()),
        online_cpus: online.to_string(),
        threads: online.0.len(),
        memory_bytes: get("hw.physmem").and_then(|v| v.parse().ok()).unwrap_or(0),
        smt: get("machdep.hyperthreading_allowed").map(|v| smt_word(&v).to_string()),
        thp: get("vm.pmap.pg_ps_enabled").map(|v| thp_word(&v).to_string()),
        cpufreq_driver: get("dev.cpufreq.0.freq_driver"),
        clocksource: get("kern.timecounter.hardware"),
        hypervisor: get("kern.vm_guest").filter(|g| g != "none"),
        ..Default::default()
    };
    match get("kern.sched.topology_spec").and_then(|x| parse_topology_spec(&x).ok()) {
        Some(groups) => {
            let s = shape(&groups, online);
            (fp.sockets, fp.cores, fp.numa_nodes) = (s.packages, s.cores, s.numa_nodes);
        }
        // No scheduler topology: the kernel's own count of cores.
        None => {
            fp.cores = get("kern.smp.cores")
                .and_then(|c| c.parse().ok())
                .unwrap_or(fp.threads)
                .clamp(1, fp.threads.max(1));
            (fp.sockets, fp.numa_nodes) = (1, 1);
        }
    }
    fp.vulnerabilities = MITIGATIONS
        .iter()
        .filter_map(|n| get(n).map(|v| (n.to_string(), v)))
        .collect::<IndexMap<_, _>>();
    fp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture of `testdata/freebsd/`, without the lines naming its
    /// source (those start with `#` and come first).
    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/system/testdata/freebsd")
            .join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let body: Vec<&str> = text.lines().skip_while(|l| l.starts_with('#')).collect();
        body.join("\n")
    }

    fn cpus(n: usize) -> CpuSet {
        CpuSet((0..n).collect())
    }

    #[test]
    fn smp4s_two_quad_core_processors_are_two_packages() {
        let g = parse_topology_spec(&fixture("topology-smp4.xml")).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].cpus, (0..8).collect::<Vec<_>>());
        assert_eq!(g[0].children.len(), 2);
        assert_eq!(topology_cpus(&g), cpus(8));
        let s = shape(&g, &cpus(8));
        assert_eq!((s.packages, s.cores, s.numa_nodes), (2, 8, 1));
        let pkg: Vec<usize> = s.cpus.iter().map(|t| t.package).collect();
        assert_eq!(pkg, [0, 0, 0, 0, 1, 1, 1, 1]);
        assert!(s.cpus.iter().all(|t| t.thread == 0));
    }

    #[test]
    fn smt_siblings_share_a_core() {
        let g = parse_topology_spec(&fixture("topology-smt4.xml")).unwrap();
        let s = shape(&g, &cpus(4));
        assert_eq!((s.packages, s.cores, s.numa_nodes), (1, 2, 1));
        let t: Vec<(usize, usize)> = s.cpus.iter().map(|t| (t.core, t.thread)).collect();
        assert_eq!(t, [(0, 0), (0, 1), (1, 0), (1, 1)]);
        // A cpuset restriction describes only the allowed CPUs.
        let s = shape(&g, &CpuSet(vec![1, 2]));
        assert_eq!(s.cpus.len(), 2);
        assert_eq!((s.cores, s.cpus[0].thread), (2, 1));
    }

    #[test]
    fn the_scale_policies_order_a_real_smt_machine_as_on_linux() {
        let g = parse_topology_spec(&fixture("topology-smt8.xml")).unwrap();
        let online = topology_cpus(&g);
        assert_eq!(online, cpus(8));
        let s = shape(&g, &online);
        assert_eq!((s.packages, s.cores, s.numa_nodes), (1, 4, 1));
        // compact takes one thread of every core first (hwloc's core
        // order, will-it-scale's default), smt fills a core's siblings
        // first (will-it-scale -m).
        let order = crate::bench::scale::topology::order;
        assert_eq!(order(&s.cpus, "compact"), [0, 2, 4, 6, 1, 3, 5, 7]);
        assert_eq!(order(&s.cpus, "smt"), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(order(&s.cpus, "spread"), [0, 2, 4, 6, 1, 3, 5, 7]);
    }

    #[test]
    fn malformed_topology_is_an_error_naming_the_sysctl() {
        for bad in [
            "<groups><group level=\"x\"/></groups>",
            "<cpu/>",
            "<groups>",
        ] {
            let e = parse_topology_spec(bad).unwrap_err();
            assert!(e.starts_with("topology_spec"), "{e}");
        }
        // NUL padding after the document, as the sysctl returns it.
        assert!(
            parse_topology_spec("<groups>\n</groups>\n\0\0")
                .unwrap()
                .is_empty()
        );
        // No topology: every CPU its own core in package 0.
        let s = shape(&[], &cpus(3));
        assert_eq!((s.packages, s.cores), (1, 3));
    }

    #[test]
    fn frequency_levels_of_real_machines() {
        // A Pentium 4 2.8 GHz (350 MHz steps, power unknown): its base
        // clock plus one is listed first.
        let p4 = parse_listing(&fixture("sysctl-freq-p4.txt"));
        assert_eq!(max_freq_mhz(&p4["dev.cpu.0.freq_levels"]), Some(2801));
        // hwpstate_intel lists only the maximum.
        let hwp = parse_listing(&fixture("sysctl-freq-hwpstate.txt"));
        assert_eq!(max_freq_mhz(&hwp["dev.cpu.0.freq_levels"]), Some(1900));
        assert_eq!(hwp["dev.cpufreq.0.freq_driver"], "hwpstate_intel0");
        assert_eq!(max_freq_mhz(""), None);
        assert_eq!(max_freq_mhz("fast/-1"), None);
    }

    #[test]
    fn values_print_as_sysctl_8_prints_them() {
        // vm.pmap.pti and kern.hz are ints (amd64 pmap.c, kern_clock.c).
        assert_eq!(format_value(2, "I", &1i32.to_ne_bytes()).unwrap(), "1");
        assert_eq!(
            format_value(2, "I", &1000i32.to_ne_bytes()).unwrap(),
            "1000"
        );
        // hw.machine, kern.ident: strings with their NUL.
        assert_eq!(format_value(3, "A", b"amd64\0").unwrap(), "amd64");
        assert_eq!(format_value(3, "A", b"GENERIC\0").unwrap(), "GENERIC");
        // kern.cp_time: an array of longs.
        let cp: Vec<u8> = [10i64, 0, 20, 5, 965]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        let text = format_value(CTLTYPE_LONG, "LA", &cp).unwrap();
        assert_eq!(text, "10 0 20 5 965");
        assert_eq!(cp_time_ticks(&text), Some((35, 965)));
        assert_eq!(cp_time_ticks("1 2 3"), None);
        assert_eq!(cp_times("1 0 1 0 8 4 0 4 0 2"), [(2, 10), (8, 10)]);
        // hw.physmem: an unsigned long.
        let mem = format_value(CTLTYPE_ULONG, "LU", &(16u64 << 30).to_ne_bytes()).unwrap();
        assert_eq!(mem, "17179869184");
        // kern.boottime, the first part of what sysctl(8) prints.
        let tv: Vec<u8> = [1525283860i64, 989476]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        assert_eq!(
            format_value(CTLTYPE_OPAQUE, "S,timeval", &tv).unwrap(),
            "{ sec = 1525283860, usec = 989476 }"
        );
        // Nodes, unknown structures and torn integers are not values.
        assert_eq!(format_value(1, "N", b""), None);
        assert_eq!(format_value(CTLTYPE_OPAQUE, "S,vmtotal", &tv), None);
        assert_eq!(format_value(2, "I", &[1, 0, 0]), None);
    }

    #[test]
    fn mitigation_and_page_sysctls_read_in_linux_words() {
        assert_eq!(thp_word("1"), "always");
        assert_eq!(thp_word("0"), "never");
        assert_eq!(smt_word("0"), "off");
        assert_eq!(smt_word("1"), "on");
        assert_eq!(microcode_revision("GenuineIntel", 0xde_0000_0000), "0xde");
        assert_eq!(microcode_revision("AuthenticAMD", 0x0a20_1210), "0xa201210");
    }

    #[test]
    fn a_real_freebsd_machine_fingerprints() {
        let v = parse_listing(&fixture("sysctl-i7-3770.txt"));
        let get = |n: &str| v.get(n).cloned();
        let online = cpus(v["hw.ncpu"].parse().unwrap());
        let fp = fingerprint(&get, &online);
        assert_eq!(fp.os, "FreeBSD");
        assert_eq!(fp.kernel_release, "13.1-RELEASE-p2");
        assert_eq!(
            fp.kernel_version,
            "FreeBSD 13.1-RELEASE-p2 n245412-484f039b1d0 TRUENAS"
        );
        assert_eq!(
            fp.cpu_model.as_deref(),
            Some("Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz")
        );
        // No topology in the listing: the kernel's kern.smp.cores.
        assert_eq!((fp.threads, fp.cores, fp.sockets), (8, 4, 1));
        assert_eq!(fp.online_cpus, "0-7");
        assert!(fp.vulnerabilities.is_empty());
        assert_eq!((fp.hypervisor, fp.thp), (None, None));
        // With the scheduler's topology of a machine of the same shape.
        let mut with_topo = v.clone();
        with_topo.insert(
            "kern.sched.topology_spec".into(),
            fixture("topology-smt8.xml"),
        );
        with_topo.insert("vm.pmap.pti".into(), "1".into());
        with_topo.insert("kern.vm_guest".into(), "none".into());
        let get = |n: &str| with_topo.get(n).cloned();
        let fp = fingerprint(&get, &online);
        assert_eq!(
            (fp.threads, fp.cores, fp.sockets, fp.numa_nodes),
            (8, 4, 1, 1)
        );
        assert_eq!(fp.vulnerabilities["vm.pmap.pti"], "1");
        assert_eq!(fp.hypervisor, None);
    }
}
