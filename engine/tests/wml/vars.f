# Every randvar and cvar form as an iosize, plus the side commands.
set $dir=/tmp
set $flag=true
set $label="vars test"
set $unif=randvar(type=uniform, min=512, mean=2k, round=512, randsrc=urandom)
set $gam=randvar(type=gamma, mean=4k, gamma=2000, min=1k, seed=42)
set $tab=randvar(type=tabular, min=1k, round=1k, randtable={{50, 1k, 2k}, {50, 2k, 8k}})
set $c1=cvar(type=cvar-gamma, parameters=mean:4096;gamma:1.5, min=512, max=65536, round=512)
set $c2=cvar(type=cvar-uniform, parameters=lower:512;upper:8192)
set $c3=cvar(type=cvar-normal, parameters=mean:4096;sigma:512, min=512)
set $c4=cvar(type=cvar-exponential, parameters=mean:4096, min=512)
set $c5=cvar(type=cvar-lognormal, parameters=shape:0.5;scale:8, min=512)
set $c6=cvar(type=cvar-weibull, parameters=shape:2;scale:4096, min=512)
set $c7=cvar(type=cvar-erlang, parameters=shape:2;rate:0.001, min=512)
set $c8=cvar(type=cvar-triangular, parameters=lower:512;upper:8192;mode:2048)
define file name=f,path=$dir,size=1m,prealloc
define process name=p
{
  thread name=t,memsize=1m
  {
    flowop write name=wu,filename=f,iosize=$unif,random
    flowop write name=wg,filename=f,iosize=$gam,random
    flowop write name=wt,filename=f,iosize=$tab,random
    flowop write name=w1,filename=f,iosize=$c1,random
    flowop write name=w2,filename=f,iosize=$c2,random
    flowop write name=w3,filename=f,iosize=$c3,random
    flowop write name=w4,filename=f,iosize=$c4,random
    flowop write name=w5,filename=f,iosize=$c5,random
    flowop write name=w6,filename=f,iosize=$c6,random
    flowop write name=w7,filename=f,iosize=$c7,random
    flowop write name=w8,filename=f,iosize=$c8,random
  }
}
echo "label=$label flag=$flag u is $unif c1 is $c1 unknown $nosuchvar"
system "true"
debug 1
version
list filesets
list flowop
enable lathist
set mode nousestats
create files
sleep 0
psrun -1 60
