//! C testcases written for will-it-scale, run unchanged.
//!
//! The contract is will-it-scale's: the file defines
//! `void testcase(unsigned long long *iterations, unsigned long nr)`, which
//! loops forever bumping `*iterations`, and `char *testcase_description`;
//! optionally `void testcase_prepare(unsigned long nr_tasks)` (run once per
//! cell before the tasks exist) and `void testcase_cleanup(void)` (once,
//! after they are gone); it may call `new_task(func, arg)` to start a
//! helper (a process or thread by mode, on its task's CPU as in will-it-scale).
//!
//! The file is compiled with `cc -O2 -shared -fPIC` (`$CC` overrides `cc`)
//! together with a two-line shim that defines `new_task` as a call into
//! kbench, into the user's cache directory under a name keyed by a hash
//! of the source, shim, compiler and flags (so an edit recompiles and an
//! unchanged file does not). The library is built and dlopen()ed into
//! kbench only once a cell of it is about to run (never by `status`, a
//! report, or a run with nothing left to measure), still before the run
//! is recorded, so its symbols are checked before anything runs; its code
//! runs only in the cell processes forked from kbench. A compiler error is
//! bad input (exit 2) and shows the compiler's own message.

use std::ffi::{CStr, CString, c_char, c_ulong, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Body, Prep, Scale, Task, Testcase, engine};
use crate::bench::BenchRef;
use crate::error::bad_input;

const FLAGS: &[&str] = &["-O2", "-shared", "-fPIC"];

/// kbench's side of will-it-scale's harness: `new_task` forwards to a hook
/// kbench fills in after loading.
const SHIM: &str = "\
/* kbench: new_task() for will-it-scale testcases */
void (*kbench_new_task_hook)(void *(*)(void *), void *);
void new_task(void *(*func)(void *), void *arg) { kbench_new_task_hook(func, arg); }
";

type TestcaseFn = unsafe extern "C" fn(*mut u64, c_ulong);
type PrepareFn = unsafe extern "C" fn(c_ulong);
type CleanupFn = unsafe extern "C" fn();
type HelperFn = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type HookFn = unsafe extern "C" fn(HelperFn, *mut c_void);

struct CTestcase {
    name: String,
    description: String,
    testcase: TestcaseFn,
    prepare: Option<PrepareFn>,
    cleanup: Option<CleanupFn>,
}

struct CBody {
    testcase: TestcaseFn,
    cleanup: Option<CleanupFn>,
}

impl Testcase for CTestcase {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn prepare(&self, cx: &Prep) -> anyhow::Result<Box<dyn Body>> {
        if let Some(p) = self.prepare {
            // SAFETY: the user's testcase_prepare, with will-it-scale's
            // argument; it runs in the cell process.
            unsafe { p(cx.ntasks as c_ulong) };
        }
        Ok(Box::new(CBody {
            testcase: self.testcase,
            cleanup: self.cleanup,
        }))
    }
}

impl Body for CBody {
    fn run(&self, t: &Task) -> anyhow::Result<std::convert::Infallible> {
        // SAFETY: the user's testcase with a counter that stays valid for
        // the life of the task.
        unsafe { (self.testcase)(t.counter.as_ptr(), t.nr as c_ulong) };
        anyhow::bail!("testcase() returned (it must loop forever)")
    }
    fn cleanup(&self) {
        if let Some(c) = self.cleanup {
            // SAFETY: the user's testcase_cleanup, once, after the tasks.
            unsafe { c() };
        }
    }
}

/// `new_task()` as C testcases see it.
unsafe extern "C" fn new_task_hook(func: HelperFn, arg: *mut c_void) {
    let arg = arg as usize;
    let ok = engine::spawn_helper_for_current(Box::new(move || {
        // SAFETY: the user's helper with the user's argument.
        unsafe { func(arg as *mut c_void) };
    }));
    if !ok {
        // Outside a task (e.g. from testcase_prepare), or the helper could
        // not start: the cell's error says which; this process stops.
        // SAFETY: leaving the process.
        unsafe { libc::_exit(1) };
    }
}

/// FNV-1a 64 over several byte strings.
fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn cache_dir() -> PathBuf {
    crate::system::cache_dir("testcases")
}

/// Compile `path` (unless an identical build is cached); returns the .so.
fn compile(path: &Path, src: &[u8]) -> anyhow::Result<PathBuf> {
    let cc = std::env::var("CC")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "cc".into());
    let key = hash(&[
        src,
        SHIM.as_bytes(),
        cc.as_bytes(),
        FLAGS.join(" ").as_bytes(),
    ]);
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "testcase".into());
    let mut dir = cache_dir();
    if std::fs::create_dir_all(&dir).is_err() {
        dir = std::env::temp_dir().join("kbench-testcases");
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    }
    let so = dir.join(format!("{stem}-{key:016x}.so"));
    if so.exists() {
        return Ok(so);
    }
    let shim = dir.join(format!("kbench-shim-{:016x}.c", hash(&[SHIM.as_bytes()])));
    if !shim.exists() {
        std::fs::write(&shim, SHIM)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", shim.display()))?;
    }
    let tmp = dir.join(format!("{stem}-{key:016x}.{}.tmp.so", std::process::id()));
    let out = std::process::Command::new(&cc)
        .args(FLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(path)
        .arg(&shim)
        .output()
        .map_err(|e| bad_input!("{}: cannot run the C compiler `{cc}`: {e}", path.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(bad_input!(
            "{}: does not compile ({cc} {}):\n{}",
            path.display(),
            FLAGS.join(" "),
            msg.trim_end()
        ));
    }
    std::fs::rename(&tmp, &so).map_err(|e| anyhow::anyhow!("renaming {}: {e}", tmp.display()))?;
    Ok(so)
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a valid C string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null C string from dlerror.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Compile, load and check a will-it-scale-style C file; the testcase is
/// named after the file (`foo.c`) and has the engine's parameters.
fn load(path: &Path) -> anyhow::Result<CTestcase> {
    let src = crate::input::read(path, "a C testcase", crate::input::TEXT)?;
    let so = compile(path, &src)?;
    let cso = CString::new(so.as_os_str().as_encoded_bytes())?;
    // SAFETY: loading the library we just built; its constructors run here.
    let h = unsafe { libc::dlopen(cso.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        return Err(bad_input!("{}: cannot load: {}", path.display(), dlerror()));
    }
    let sym = |name: &str| -> *mut c_void {
        let c = CString::new(name).expect("no NUL");
        // SAFETY: a valid handle and symbol name.
        unsafe { libc::dlsym(h, c.as_ptr()) }
    };
    let f = sym("testcase");
    if f.is_null() {
        return Err(bad_input!(
            "{}: defines no `testcase` function (will-it-scale's `void testcase(unsigned long long *iterations, unsigned long nr)`)",
            path.display()
        ));
    }
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let d = sym("testcase_description") as *const *const c_char;
    // SAFETY: a `char *` variable of the library; NULL-checked.
    let description = unsafe {
        if d.is_null() || (*d).is_null() {
            format!("C testcase {name}")
        } else {
            CStr::from_ptr(*d).to_string_lossy().into_owned()
        }
    };
    let hook = sym("kbench_new_task_hook") as *mut Option<HookFn>;
    if !hook.is_null() {
        // SAFETY: the shim's function-pointer variable.
        unsafe { *hook = Some(new_task_hook) };
    }
    let opt = |name: &str| {
        let p = sym(name);
        (!p.is_null()).then_some(p)
    };
    // SAFETY: symbols of the library with will-it-scale's signatures.
    Ok(unsafe {
        CTestcase {
            name,
            description,
            testcase: std::mem::transmute::<*mut c_void, TestcaseFn>(f),
            prepare: opt("testcase_prepare")
                .map(|p| std::mem::transmute::<*mut c_void, PrepareFn>(p)),
            cleanup: opt("testcase_cleanup")
                .map(|p| std::mem::transmute::<*mut c_void, CleanupFn>(p)),
        }
    })
}

/// A C testcase of a plan the user runs, compiled and loaded only when a
/// cell of it is about to run ([`Testcase::ready`], before the run is
/// recorded, so a compiler error is still bad input that stores nothing):
/// `kbench status`, or a run with nothing left to measure, never builds
/// or loads the user's code (whose constructors would run in kbench).
pub fn lazy_c_testcase(path: &Path) -> anyhow::Result<BenchRef> {
    std::fs::metadata(path)
        .and_then(|m| {
            if m.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a file"))
            }
        })
        .map_err(|e| bad_input!("{}: cannot read C testcase: {e}", path.display()))?;
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let tc: Arc<dyn Testcase> = Arc::new(Lazy {
        path: path.to_path_buf(),
        description: format!("C testcase {name} (compiled when a cell runs)"),
        name,
        loaded: std::sync::OnceLock::new(),
    });
    Ok(BenchRef::Owned(Arc::new(Scale(tc))))
}

struct Lazy {
    path: PathBuf,
    name: String,
    description: String,
    /// The compiled and loaded testcase, or why it could not be.
    loaded: std::sync::OnceLock<Result<CTestcase, String>>,
}

impl Lazy {
    fn get(&self) -> anyhow::Result<&CTestcase> {
        self.loaded
            .get_or_init(|| load(&self.path).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|e| bad_input!("{e}"))
    }
}

impl Testcase for Lazy {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        match self.loaded.get() {
            Some(Ok(tc)) => &tc.description,
            _ => &self.description,
        }
    }
    fn ready(&self) -> anyhow::Result<()> {
        self.get().map(|_| ())
    }
    fn prepare(&self, cx: &Prep) -> anyhow::Result<Box<dyn Body>> {
        self.get()?.prepare(cx)
    }
}

/// A C testcase named by a plan that is only read (a stored campaign's
/// plan in a report): its name and parameters, never compiled or loaded.
/// Running it is an error.
pub fn unloaded_c_testcase(path: &Path) -> BenchRef {
    struct Unloaded(String);
    impl Testcase for Unloaded {
        fn name(&self) -> &str {
            &self.0
        }
        fn description(&self) -> &str {
            "C testcase of a stored plan (not loaded)"
        }
        fn prepare(&self, _: &Prep) -> anyhow::Result<Box<dyn Body>> {
            anyhow::bail!("{}: a stored plan's C testcase is never loaded", self.0)
        }
    }
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let tc: Arc<dyn Testcase> = Arc::new(Unloaded(name));
    BenchRef::Owned(Arc::new(Scale(tc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_separates_parts() {
        assert_ne!(hash(&[b"ab", b"c"]), hash(&[b"a", b"bc"]));
        assert_eq!(hash(&[b"x"]), hash(&[b"x"]));
    }
}
