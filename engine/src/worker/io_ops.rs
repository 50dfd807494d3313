//! Data flowops: read, write, whole-file and append variants, aio
//! (docs/filebench-language.md#io-buffers, #random-offsets, #flowops). They
//! open their slot implicitly when it is closed, and take their buffer from
//! the thread's memory (or from a per-flowop buffer when the thread has no
//! `memsize`).

use crate::clock;

use super::{Ret, Worker};
use crate::model::FlowopSpec;

/// Alignment (and slack) of O_DIRECT buffers.
const DIO_ALIGN: usize = 4096;

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

impl Worker {
    /// `flowoplib_filesetup`: the slot (opened implicitly if needed) and the
    /// working-set size.
    fn setup(&mut self, fo: &FlowopSpec) -> Result<(usize, u64), Ret> {
        let slot = self.fdnum(fo);
        if slot > 0 {
            if let (Some(want), Some((have, _))) = (fo.fileset, self.slots[slot].fse) {
                if want != have {
                    return Err(Ret::Error(format!(
                        "flowop {}: fd {slot} holds a file of fileset {}, which CONFLICTS with flowop supplied fileset name {}",
                        fo.name, self.shared.filesets[have].name, self.shared.filesets[want].name
                    )));
                }
            }
        }
        if self.slots[slot].fd < 0 {
            let r = self.openfile_common(fo, slot);
            if r != Ret::Ok {
                return Err(r);
            }
        }
        let wss = if fo.workingset != 0 {
            fo.workingset
        } else if let Some((f, e)) = self.slots[slot].fse {
            self.shared.filesets[f].file_size(e)
        } else {
            fo.fileset.map(|f| self.shared.filesets[f].default_size).unwrap_or(0)
        };
        Ok((slot, wss))
    }

    /// `flowoplib_iobufsetup`: a buffer of `iosize` bytes.
    fn iobuf(&mut self, fo: &FlowopSpec, iosize: u64) -> Result<*mut u8, Ret> {
        if iosize == 0 {
            return Err(Ret::Error(format!("zero iosize for flowop {}", fo.name)));
        }
        if iosize > self.shared.max_io_bytes {
            return Err(Ret::Error(format!(
                "flowop {}: iosize {iosize} is more than the {} bytes this machine can give an I/O buffer",
                fo.name, self.shared.max_io_bytes
            )));
        }
        let dio = fo.directio.get_bool();
        let size = iosize as usize + if dio { DIO_ALIGN } else { 0 };
        let ptr = if !self.mem.is_empty() {
            if self.mem.len() < size {
                return Err(Ret::Error(format!("tf_memsize smaller than IO size for flowop {}", fo.name)));
            }
            // Filebench picks a random offset in the thread memory per op;
            // the data is the same (zeros), so we use offset 0 and keep the
            // copies cache-hot (README: differences).
            self.mem.as_mut_ptr()
        } else {
            let buf = &mut self.aux[fo.stat_id].buf;
            if buf.len() < size {
                buf.resize(size, 0);
            }
            buf.as_mut_ptr()
        };
        Ok(if dio { ((ptr as usize).div_ceil(DIO_ALIGN) * DIO_ALIGN) as *mut u8 } else { ptr })
    }

    fn io_prep(&mut self, fo: &FlowopSpec, iosize: u64) -> Result<(i32, u64, *mut u8), Ret> {
        let (slot, wss) = self.setup(fo)?;
        let buf = self.iobuf(fo, iosize)?;
        Ok((self.slots[slot].fd, wss, buf))
    }

    /// `read`: sequential (rewinding at EOF) or random within the working set.
    pub fn read(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        let (fd, wss, buf) = match self.io_prep(fo, iosize) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let t0: clock::Stamp;
        let r = if fo.random.get_bool() {
            if iosize > wss {
                return Ret::Error(format!("file size smaller than IO size for flowop {}", fo.name));
            }
            let off = self.mt.fb_random64(wss, iosize);
            t0 = clock::now();
            unsafe { libc::pread(fd, buf.cast(), iosize as usize, off as i64) }
        } else {
            t0 = clock::now();
            unsafe { libc::read(fd, buf.cast(), iosize as usize) }
        };
        if r < 0 {
            let e = errno();
            self.endop(fo, t0, 0);
            return Ret::Error(format!("read failed: {e}"));
        }
        self.endop(fo, t0, r as u64);
        if r == 0 {
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        }
        Ret::Ok
    }

    /// `write`: sequential (growing the file) or random within the working set.
    pub fn write(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        let (fd, wss, buf) = match self.io_prep(fo, iosize) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let t0: clock::Stamp;
        let r = if fo.random.get_bool() {
            if wss < iosize {
                return Ret::Error(format!("file size smaller than IO size for flowop {}", fo.name));
            }
            let off = self.mt.fb_random64(wss, iosize);
            t0 = clock::now();
            unsafe { libc::pwrite(fd, buf.cast(), iosize as usize, off as i64) }
        } else {
            t0 = clock::now();
            unsafe { libc::write(fd, buf.cast(), iosize as usize) }
        };
        if r < 0 {
            return Ret::Error(format!("write failed: {}", errno()));
        }
        self.endop(fo, t0, iosize);
        Ret::Ok
    }

    /// `readwholefile`: rewind and read to EOF in `iosize` chunks, one op.
    pub fn readwholefile(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        let (slot, _) = match self.setup(fo) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let io = if iosize != 0 {
            iosize
        } else {
            self.slots[slot].fse.map(|(f, e)| self.shared.filesets[f].file_size(e)).unwrap_or(0)
        };
        let buf = match self.iobuf(fo, io) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let fd = self.slots[slot].fd;
        let t0 = clock::now();
        let mut total = 0u64;
        unsafe {
            libc::lseek(fd, 0, libc::SEEK_SET);
            loop {
                let r = libc::read(fd, buf.cast(), io as usize);
                if r <= 0 {
                    break;
                }
                total += r as u64;
            }
        }
        self.endop(fo, t0, total);
        Ret::Ok
    }

    /// `writewholefile`: write the size of the file on `srcfd`, at the current offset.
    pub fn writewholefile(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        let (slot, wss) = match self.setup(fo) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let src = self.slots[fo.srcfd].fse;
        if fo.srcfd > 0 && src.is_none() {
            return Ret::Error(format!("flowop {}: srcfd {} has no file", fo.name, fo.srcfd));
        }
        let size = src.map(|(f, e)| self.shared.filesets[f].file_size(e)).unwrap_or(wss);
        let chunk = if iosize == 0 { size } else { iosize };
        let buf = match self.iobuf(fo, chunk) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let fd = self.slots[slot].fd;
        let t0 = clock::now();
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk);
            if unsafe { libc::write(fd, buf.cast(), n as usize) } < 0 {
                return Ret::Error(format!("writewholefile failed: {}", errno()));
            }
            left -= n;
        }
        self.endop(fo, t0, size);
        Ret::Ok
    }

    /// `appendfile`: seek to the end and write `iosize`.
    pub fn appendfile(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        self.append(fo, iosize)
    }

    /// `appendfilerand`: append U[0, iosize-1] bytes (0 = a counted no-op).
    pub fn appendfilerand(&mut self, fo: &FlowopSpec) -> Ret {
        let iosize = fo.iosize.get_int();
        let n = self.mt.fb_random64(iosize, 0);
        if n == 0 {
            let t0 = clock::now();
            self.endop(fo, t0, 0);
            return Ret::Ok;
        }
        self.append(fo, n)
    }

    fn append(&mut self, fo: &FlowopSpec, n: u64) -> Ret {
        let (fd, _, buf) = match self.io_prep(fo, n) {
            Ok(v) => v,
            Err(r) => return r,
        };
        let t0 = clock::now();
        let r = unsafe {
            libc::lseek(fd, 0, libc::SEEK_END);
            libc::write(fd, buf.cast(), n as usize)
        };
        if r < 0 {
            return Ret::Error(format!("append failed: {}", errno()));
        }
        self.endop(fo, t0, n);
        Ret::Ok
    }

    /// `aiowrite`: a random write; done synchronously (see README limits).
    pub fn aiowrite(&mut self, fo: &FlowopSpec) -> Ret {
        if !fo.random.get_bool() {
            return Ret::Error(format!("flowop {}: aiowrite needs `random`", fo.name));
        }
        self.write(fo)
    }

    /// `aiowait`: nothing is outstanding; one op.
    pub fn aiowait(&mut self, fo: &FlowopSpec) -> Ret {
        let t0 = clock::now();
        self.endop(fo, t0, 0);
        Ret::Ok
    }
}
