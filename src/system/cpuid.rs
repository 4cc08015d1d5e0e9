//! What the x86 CPUID instruction says about the CPU, for OSes that do not
//! list it in a file (FreeBSD has no /proc/cpuinfo), and the hypervisor's
//! vendor signature for every OS. Other architectures answer `None`.
//!
//! Flag names are Linux's names, so a plan's `cpu.flag.pcid` probe means
//! the same on every OS; the Linux backend's tests check each one against
//! what Linux lists on the machine that runs them.

/// CPUID leaf `leaf`, sub-leaf `sub`: (eax, ebx, ecx, edx).
#[cfg(target_arch = "x86_64")]
fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    // CPUID exists on every x86_64 CPU.
    let r = std::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Twelve bytes of register text (vendor strings), trimmed.
#[cfg(target_arch = "x86_64")]
fn text(words: [u32; 3]) -> Option<String> {
    let b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let s = String::from_utf8_lossy(&b)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() || c == ' ')).then_some(s)
}

/// The hypervisor's vendor signature from leaf 0x40000000 (`KVMKVMKVM`,
/// `Microsoft Hv`, `VMwareVMware`, `bhyve bhyve`), when the CPU says it
/// runs under one (leaf 1, ECX bit 31).
#[cfg(target_arch = "x86_64")]
pub fn hypervisor_vendor() -> Option<String> {
    if cpuid(1, 0).2 & (1 << 31) == 0 {
        return None;
    }
    let (_, b, c, d) = cpuid(0x4000_0000, 0);
    text([b, c, d])
}

/// The vendor id (`GenuineIntel`, `AuthenticAMD`) and the family, model
/// and stepping as Linux computes them from leaf 1.
#[cfg(target_arch = "x86_64")]
#[cfg_attr(target_os = "linux", allow(dead_code))] // FreeBSD's fingerprint
pub fn signature() -> Option<(String, u32, u32, u32)> {
    let (_, b, c, d) = cpuid(0, 0);
    let vendor = text([b, d, c])?;
    let a = cpuid(1, 0).0;
    let base_family = (a >> 8) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((a >> 20) & 0xff)
    } else {
        base_family
    };
    let mut model = (a >> 4) & 0xf;
    if base_family >= 0x6 {
        model |= ((a >> 16) & 0xf) << 4;
    }
    Some((vendor, family, model, a & 0xf))
}

/// (Linux name, leaf, register 0..3 = eax..edx, bit) of the flags kbench
/// knows how to read on every OS: those a kernel, libc or compiler change
/// is measured against (PTI and PCID, speculation controls, vector units).
#[cfg(target_arch = "x86_64")]
pub(super) const FLAGS: &[(&str, u32, usize, u32)] = &[
    ("pcid", 1, 2, 17),
    ("x2apic", 1, 2, 21),
    ("avx", 1, 2, 28),
    ("hypervisor", 1, 2, 31),
    ("ht", 1, 3, 28),
    ("smep", 7, 1, 7),
    ("invpcid", 7, 1, 10),
    ("avx2", 7, 1, 5),
    ("avx512f", 7, 1, 16),
    ("smap", 7, 1, 20),
    ("md_clear", 7, 3, 10),
    ("arch_capabilities", 7, 3, 29),
];

/// The flags of [`FLAGS`] this CPU has.
#[cfg(target_arch = "x86_64")]
#[cfg_attr(target_os = "linux", allow(dead_code))] // FreeBSD's fingerprint
pub fn flags() -> Vec<String> {
    let max = cpuid(0, 0).0;
    FLAGS
        .iter()
        .filter(|f| f.1 <= max)
        .filter(|f| {
            let r = cpuid(f.1, 0);
            let reg = [r.0, r.1, r.2, r.3][f.2];
            reg & (1 << f.3) != 0
        })
        .map(|f| f.0.to_string())
        .collect()
}

#[cfg(not(target_arch = "x86_64"))]
pub fn hypervisor_vendor() -> Option<String> {
    None
}

#[cfg(not(target_arch = "x86_64"))]
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub fn signature() -> Option<(String, u32, u32, u32)> {
    None
}

#[cfg(not(target_arch = "x86_64"))]
#[cfg_attr(target_os = "linux", allow(dead_code))]
pub fn flags() -> Vec<String> {
    Vec::new()
}
