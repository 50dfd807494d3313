//! The flowop types and their statistics classes (docs/filebench-language.md#flowops, #statistics).

use crate::stats::Rw;

/// Every flowop type of 1.5-alpha3, plus composites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Read,
    Write,
    ReadWholeFile,
    WriteWholeFile,
    AppendFile,
    AppendFileRand,
    OpenFile,
    CreateFile,
    CloseFile,
    DeleteFile,
    StatFile,
    Fsync,
    FsyncSet,
    MakeDir,
    RemoveDir,
    ListDir,
    AioWrite,
    AioWait,
    Hog,
    Delay,
    EventLimit,
    IopsLimit,
    OpsLimit,
    BwLimit,
    FinishOnCount,
    FinishOnBytes,
    Block,
    Wakeup,
    SemBlock,
    SemPost,
    TestRandVar,
    Print,
    Composite,
}

/// Statistics class (docs/filebench-language.md#text-output: IO and AIO make the IO Summary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Io,
    Aio,
    Other,
    Sync,
}

const NAMES: &[(&str, Kind)] = &[
    ("read", Kind::Read),
    ("write", Kind::Write),
    ("readwholefile", Kind::ReadWholeFile),
    ("writewholefile", Kind::WriteWholeFile),
    ("appendfile", Kind::AppendFile),
    ("appendfilerand", Kind::AppendFileRand),
    ("openfile", Kind::OpenFile),
    ("createfile", Kind::CreateFile),
    ("closefile", Kind::CloseFile),
    ("deletefile", Kind::DeleteFile),
    ("statfile", Kind::StatFile),
    ("fsync", Kind::Fsync),
    ("fsyncset", Kind::FsyncSet),
    ("makedir", Kind::MakeDir),
    ("removedir", Kind::RemoveDir),
    ("listdir", Kind::ListDir),
    ("aiowrite", Kind::AioWrite),
    ("aiowait", Kind::AioWait),
    ("hog", Kind::Hog),
    ("delay", Kind::Delay),
    ("eventlimit", Kind::EventLimit),
    ("iopslimit", Kind::IopsLimit),
    ("opslimit", Kind::OpsLimit),
    ("bwlimit", Kind::BwLimit),
    ("finishoncount", Kind::FinishOnCount),
    ("finishonbytes", Kind::FinishOnBytes),
    ("block", Kind::Block),
    ("wakeup", Kind::Wakeup),
    ("semblock", Kind::SemBlock),
    ("sempost", Kind::SemPost),
    ("testrandvar", Kind::TestRandVar),
    ("print", Kind::Print),
];

impl Kind {
    /// Looks up a flowop type by its WML name.
    pub fn from_name(s: &str) -> Option<Kind> {
        NAMES.iter().find(|(n, _)| *n == s).map(|(_, k)| *k)
    }

    /// The WML name (`"composite"` for composites).
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, k)| *k == self).map(|(n, _)| *n).unwrap_or("composite")
    }

    /// IO / AIO / OTHER / SYNC.
    pub fn class(self) -> Class {
        use Kind::*;
        match self {
            AioWrite | AioWait => Class::Aio,
            Hog | Delay | EventLimit | IopsLimit | OpsLimit | BwLimit | FinishOnCount | FinishOnBytes | TestRandVar
            | Print | Composite => Class::Other,
            Block | Wakeup | SemBlock | SemPost => Class::Sync,
            _ => Class::Io,
        }
    }

    /// Read/write class for the rd/wr columns.
    pub fn rw(self) -> Rw {
        use Kind::*;
        match self {
            Read | ReadWholeFile => Rw::Read,
            Write | WriteWholeFile | AppendFile | AppendFileRand | AioWrite => Rw::Write,
            _ => Rw::None,
        }
    }

    /// True for the flowops that open a file implicitly (docs/filebench-language.md#fd-slots).
    pub fn does_io(self) -> bool {
        use Kind::*;
        matches!(self, Read | Write | ReadWholeFile | WriteWholeFile | AppendFile | AppendFileRand | AioWrite)
    }

    /// True if the IO Summary counts it.
    pub fn in_summary(self) -> bool {
        matches!(self.class(), Class::Io | Class::Aio)
    }
}
