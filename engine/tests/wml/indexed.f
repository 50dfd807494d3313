# indexed picks: an integer index variable (1.5 meaning: value % entries).
set $dir=/tmp
set $idx=randvar(type=uniform, min=0, mean=5)
define fileset name=fs,path=$dir,size=4k,entries=100,dirwidth=10,prealloc=100
define process name=p
{
  thread name=t
  {
    flowop openfile name=op,filesetname=fs,indexed=$idx,fd=1
    flowop closefile name=cl,fd=1
    flowop statfile name=st,filesetname=fs,indexed=$idx
  }
}
run 60
