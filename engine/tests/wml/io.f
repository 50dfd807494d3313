# Data flowops: read/write sequential and random, whole-file, append, aio,
# fsync/fsyncset, statfile by fd and by pick, opennext, noreadahead.
set $dir=/tmp
set $iosz=randvar(type=uniform, min=1k, mean=4k, round=1k)
define fileset name=data,path=$dir,size=64k,entries=200,dirwidth=10,prealloc=50
define file name=big,path=$dir,size=1m,prealloc
define process name=io,instances=1
{
  thread name=t,memsize=1m,instances=2
  {
    flowop read name=seqread,filename=big,iosize=16k,fd=3
    flowop read name=randread,filename=big,iosize=4k,random,workingset=256k,fd=3
    flowop write name=randwrite,filename=big,iosize=$iosz,random,fd=4,dsync
    flowop write name=seqwrite,filesetname=data,iosize=8k,fd=5
    flowop closefile name=close5,fd=5
    flowop openfile name=open1,filesetname=data,fd=1,noreadahead
    flowop readwholefile name=rwf,fd=1,iosize=8k
    flowop fsync name=sync1,fd=1
    flowop statfile name=fstat1,fd=1
    flowop closefile name=close1,fd=1
    flowop openfile name=rot,filesetname=data,fd=7,opennext
    flowop closefile name=close7,fd=7
    flowop createfile name=create2,filesetname=data,fd=2
    flowop writewholefile name=wwf,srcfd=2,fd=2,iosize=16k
    flowop appendfile name=app,fd=2,iosize=1k
    flowop appendfilerand name=apprand,fd=2,iosize=2k
    flowop fsyncset name=syncset,filesetname=data
    flowop closefile name=close2,fd=2
    flowop deletefile name=del,filesetname=data
    flowop statfile name=stat,filesetname=data
    flowop aiowrite name=aw,filename=big,iosize=4k,random,fd=6
    flowop aiowait name=await
  }
}
run 60
