# Entity attributes: files and filesets with reuse/trusttree/readonly/
# writeonly/paralloc/prealloc, processes and threads with instances, nice,
# memsize, useism and ioprio; filesize as an alias of size.
set $dir=/tmp
set $nent=30
define fileset name=ro,path=$dir,filesize=4k,entries=$nent,dirwidth=10,prealloc,readonly,paralloc
define fileset name=wo,path=$dir,size=4k,entries=$nent,dirwidth=10,dirgamma=0,prealloc=100,writeonly
define file name=kept,path=$dir,size=128k,prealloc,reuse
define file name=trusted,path=$dir,size=128k,prealloc,trusttree
define process name=p,instances=2,nice=1
{
  thread name=reader,instances=2,memsize=1m,useism,ioprio=4
  {
    flowop openfile name=ro_open,filesetname=ro,fd=1
    flowop readwholefile name=ro_read,fd=1,iosize=4k
    flowop closefile name=ro_close,fd=1
    flowop read name=kept_read,filename=kept,iosize=8k,random
  }
  thread name=writer,memsize=1m
  {
    flowop openfile name=wo_open,filesetname=wo,fd=1
    flowop write name=wo_write,fd=1,iosize=4k,random
    flowop closefile name=wo_close,fd=1
    flowop write name=trusted_write,filename=trusted,iosize=8k,random
  }
}
run 60
