//! Flowops that open, create, close, delete, stat and sync files, and the
//! directory flowops (docs/filebench-language.md#fd-slots, #flowops). Only the system call is timed,
//! as in Filebench; the pick happens before the clock starts.

use crate::clock;
use std::ffi::CStr;

use super::{Ret, Worker};
use crate::fileset::{Fileset, Want};
use crate::kind::Kind;
use crate::model::FlowopSpec;

/// `sizeof(struct dirent)` on Linux x86-64 glibc, for listdir's byte count.
const DIRENT_SIZE: u64 = 280;

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

fn open_flags(fs: &Fileset, fo: &FlowopSpec) -> i32 {
    let mut f = if fs.readonly {
        libc::O_RDONLY
    } else if fs.writeonly {
        libc::O_WRONLY
    } else {
        libc::O_RDWR
    };
    if fo.dsync.get_bool() {
        f |= libc::O_SYNC;
    }
    if fo.directio.get_bool() {
        f |= libc::O_DIRECT;
    }
    f
}

impl Worker {
    fn index_of(&self, fo: &FlowopSpec, fs: &Fileset) -> Option<f64> {
        let v = fo.indexed.as_ref()?.get_dbl();
        if self.shared.indexed_v14 {
            Some(v * (fs.tree.files.len() / 2) as f64)
        } else {
            Some(v)
        }
    }

    /// `flowoplib_openfile_common`: pick an existing file, open it on `slot`.
    pub fn openfile_common(&mut self, fo: &FlowopSpec, slot: usize) -> Ret {
        let Some(fsi) = fo.fileset else {
            return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
        };
        if self.slots[slot].fd >= 0 {
            return Ret::Error(format!("flowop {} attempted to open without closing on fd {slot}", fo.name));
        }
        let fs = &self.shared.filesets[fsi];
        let tid = if fo.opennext.get_bool() { self.id.utid } else { 0 };
        let index = self.index_of(fo, fs);
        let Some(e) = fs.pick_file(Want::Exists, tid, index, &|| self.shared.stopping()) else {
            return Ret::Norsc(format!("no existing file in {}", fs.name));
        };
        self.slots[slot].fse = Some((fsi, e));
        let flags = open_flags(fs, fo);
        let t0 = clock::now();
        let fd = unsafe { libc::open(fs.file_paths[e].as_ptr(), flags, 0o666) };
        self.endop(fo, t0, 0);
        if fd < 0 {
            let err = errno();
            fs.unbusy_file(e, None, 0);
            return Ret::Error(format!("failed to open file {}: {err}", fs.file_paths[e].to_string_lossy()));
        }
        if fo.noreadahead.get_bool() {
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
            self.shared.out.log("** Read ahead disabled **");
        }
        fs.unbusy_file(e, None, 1);
        self.slots[slot].fd = fd;
        Ret::Ok
    }

    /// `createfile`: pick a non-existing file and create it on the fd slot.
    pub fn createfile(&mut self, fo: &FlowopSpec) -> Ret {
        let slot = fo.fd;
        if self.slots[slot].fd >= 0 {
            return Ret::Error(format!("flowop {} attempted to create without closing on fd {slot}", fo.name));
        }
        let Some(fsi) = fo.fileset else {
            return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
        };
        let fs = &self.shared.filesets[fsi];
        let index = self.index_of(fo, fs);
        let Some(e) = fs.pick_file(Want::NotExists, 0, index, &|| self.shared.stopping()) else {
            return Ret::Norsc(format!("no non-existing file in {}", fs.name));
        };
        self.slots[slot].fse = Some((fsi, e));
        let flags = open_flags(fs, fo) | libc::O_CREAT;
        let path = &fs.file_paths[e];
        let t0 = clock::now();
        let mut fd = unsafe { libc::open(path.as_ptr(), flags, 0o666) };
        if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
            // Parent directory missing: create it (Filebench stats and mkdirs first).
            let owned = path.to_string_lossy().into_owned();
            if let Some(parent) = std::path::Path::new(&owned).parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            fd = unsafe { libc::open(path.as_ptr(), flags, 0o666) };
        }
        self.endop(fo, t0, 0);
        if fd < 0 {
            let err = errno();
            fs.unbusy_file(e, None, 0);
            return Ret::Error(format!("failed to create file {}: {err}", path.to_string_lossy()));
        }
        fs.unbusy_file(e, Some(true), 1);
        self.slots[slot].fd = fd;
        Ret::Ok
    }

    /// `closefile`: waits for the entry to be idle, closes, drops the open count.
    pub fn closefile(&mut self, fo: &FlowopSpec) -> Ret {
        let slot = fo.fd;
        let s = self.slots[slot];
        if s.fd < 0 {
            return Ret::Error(format!("flowop {} attempted to close an already closed fd {slot}", fo.name));
        }
        let fse = s.fse;
        if let Some((f, e)) = fse {
            if !self.shared.filesets[f].wait_idle(e, &|| self.shared.stopping()) {
                return Ret::Ok;
            }
        }
        let t0 = clock::now();
        unsafe { libc::close(s.fd) };
        self.endop(fo, t0, 0);
        if let Some((f, e)) = fse {
            self.shared.filesets[f].closed(e);
        }
        self.slots[slot].fd = -1;
        Ret::Ok
    }

    /// `deletefile`: the file last used on `fd`, or a rotor pick of a file
    /// nobody has open; skipped silently while another thread has it open.
    pub fn deletefile(&mut self, fo: &FlowopSpec) -> Ret {
        let fd = fo.fd;
        let (fsi, e) = if let Some(fse) = self.slots[fd].fse.filter(|_| fd > 0) {
            self.slots[fd].fse = None;
            if !self.shared.filesets[fse.0].busy_wait_file(fse.1, &|| self.shared.stopping()) {
                return Ret::Ok;
            }
            fse
        } else {
            let Some(fsi) = fo.fileset else {
                return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
            };
            let fs = &self.shared.filesets[fsi];
            let index = self.index_of(fo, fs);
            // A file nobody holds open first; only when every one is open
            // (or busy) Filebench's pick, whose open file is then skipped.
            let picked = fs
                .pick_unopened_file(index)
                .or_else(|| fs.pick_file(Want::Exists, 0, index, &|| self.shared.stopping()));
            match picked {
                Some(e) => (fsi, e),
                None => return Ret::Norsc(format!("no existing file in {}", fs.name)),
            }
        };
        let fs = &self.shared.filesets[fsi];
        let open = fs.open_count(e);
        let mine = fd > 0 && self.slots[fd].fd >= 0;
        if (mine && open > 1) || (!mine && open > 0) {
            fs.unbusy_file(e, None, 0);
            return Ret::Ok;
        }
        let t0 = clock::now();
        unsafe { libc::unlink(fs.file_paths[e].as_ptr()) };
        self.endop(fo, t0, 0);
        fs.unbusy_file(e, Some(false), -(open as i64));
        Ret::Ok
    }

    /// `statfile`: fstat of an open slot, else stat of a rotor-picked file.
    pub fn statfile(&mut self, fo: &FlowopSpec) -> Ret {
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if fo.fd > 0 && self.slots[fo.fd].fd >= 0 {
            let t0 = clock::now();
            unsafe { libc::fstat(self.slots[fo.fd].fd, &mut st) };
            self.endop(fo, t0, 0);
            return Ret::Ok;
        }
        let Some(fsi) = fo.fileset else {
            return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
        };
        let fs = &self.shared.filesets[fsi];
        let index = self.index_of(fo, fs);
        let Some(e) = fs.pick_file(Want::Exists, 0, index, &|| self.shared.stopping()) else {
            return Ret::Norsc(format!("no existing file in {}", fs.name));
        };
        let t0 = clock::now();
        unsafe { libc::stat(fs.file_paths[e].as_ptr(), &mut st) };
        self.endop(fo, t0, 0);
        fs.unbusy_file(e, None, 0);
        Ret::Ok
    }

    /// `fsync` of the flowop's open slot.
    pub fn fsync(&mut self, fo: &FlowopSpec) -> Ret {
        let s = self.slots[fo.fd];
        if s.fd < 0 || s.fse.is_none() {
            return Ret::Error(format!("flowop {} attempted to fsync a closed fd {}", fo.name, fo.fd));
        }
        let t0 = clock::now();
        unsafe { libc::fsync(s.fd) };
        self.endop(fo, t0, 0);
        Ret::Ok
    }

    /// `fsyncset`: every slot whose last file belongs to the fileset (closed
    /// slots included, as in Filebench), one op each.
    pub fn fsyncset(&mut self, fo: &FlowopSpec) -> Ret {
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s.fse.map(|(f, _)| Some(f)) != Some(fo.fileset) || fo.fileset.is_none() {
                continue;
            }
            let t0 = clock::now();
            unsafe { libc::fsync(s.fd) };
            self.endop(fo, t0, 0);
        }
        Ret::Ok
    }

    /// `makedir` / `removedir` on a leaf directory.
    pub fn leafdir(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(fsi) = fo.fileset else {
            return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
        };
        let fs = &self.shared.filesets[fsi];
        let make = fo.kind == Kind::MakeDir;
        let want = if make { Want::NotExists } else { Want::Exists };
        let index = fo.indexed.as_ref().map(|a| a.get_dbl());
        let Some(d) = fs.pick_leafdir(want, index) else {
            return Ret::Norsc(format!(
                "no {} leaf directory in {}",
                if make { "non-existing" } else { "existing" },
                fs.name
            ));
        };
        let path = fs.leaf_paths[d].as_ptr();
        let t0 = clock::now();
        let r = unsafe {
            if make {
                libc::mkdir(path, 0o755)
            } else {
                libc::rmdir(path)
            }
        };
        self.endop(fo, t0, 0);
        let ok = r == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(if make { libc::EEXIST } else { libc::ENOENT });
        fs.unbusy_leafdir(d, Some(if ok { make } else { !make }));
        Ret::Ok
    }

    /// `listdir`: read a whole (non-leaf) directory as one op.
    pub fn listdir(&mut self, fo: &FlowopSpec) -> Ret {
        let Some(fsi) = fo.fileset else {
            return Ret::Error(format!("flowop {}: no fileset (filesetname) given", fo.name));
        };
        let fs = &self.shared.filesets[fsi];
        let Some(d) = fs.pick_dir() else {
            return Ret::Error(format!("flowop {}: fileset {} has no directory", fo.name, fs.name));
        };
        let t0 = clock::now();
        let mut bytes = 0u64;
        unsafe {
            let dir = libc::opendir(fs.dir_paths[d].as_ptr());
            if dir.is_null() {
                self.endop(fo, t0, 0);
                return Ret::Error(format!("listdir {}: {}", fs.dir_paths[d].to_string_lossy(), errno()));
            }
            loop {
                let ent = libc::readdir(dir);
                if ent.is_null() {
                    break;
                }
                let name = CStr::from_ptr((*ent).d_name.as_ptr());
                bytes += name.to_bytes().len() as u64 + DIRENT_SIZE - 1;
            }
            libc::closedir(dir);
        }
        self.endop(fo, t0, bytes);
        Ret::Ok
    }
}
