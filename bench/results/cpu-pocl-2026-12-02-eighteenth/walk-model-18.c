/* walk-model-18.c: the fourteenth round's walk-model.c with more walks
 * (bench/RESULTS.md, eighteenth round). Two threads, eight sequences of S
 * rows of 2 KiB, an f16 add against in-cache values, prefetchw ahead.
 *   linear       a u16 add over the buffer in 64 KiB blocks (the stream)
 *   rmaj         row-major steps of 512 bytes, each sequence asking for
 *                the step `a` on (the kernels' walk); none: no prefetch
 *   lin f16add   the f16 add over the buffer in 64 KiB blocks
 *   stag         a row at a time, sequence b starting its row at step b
 *                (wrapping), asking for the same step r rows on
 *   smaj         R rows of one sequence at a time (values of R rows reused
 *                per sequence), asking `a` lines on
 * W (third argument): FMA work per row standing for the values (0: none).
 * Build: gcc -O2 -march=skylake-avx512 -pthread walk-model-18.c
 * Run:   ./a.out ROUNDS ROWS W   (medians over ROUNDS; ratio to linear) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static size_t B=8,S=512,ROWB=2048; static uint8_t *x; static int REPS=1;
typedef struct{const char*name; int mode; size_t chunk; int ahead; int work;}var;
static volatile float sink;
static inline void burn(int n){ __m512 a=_mm512_set1_ps(1.0f),b=_mm512_set1_ps(1.5f),c=_mm512_set1_ps(0.5f),d=_mm512_set1_ps(0.25f); for(int i=0;i<n;i++){ a=_mm512_fmadd_ps(a,b,c); c=_mm512_fmadd_ps(c,d,b); d=_mm512_fmadd_ps(d,a,b); b=_mm512_fmadd_ps(b,c,a);} sink=_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a,b),_mm512_add_ps(c,d))); }
static var V;
__attribute__((aligned(64))) static float tile[2][1024];
__attribute__((aligned(64))) static float vals[2][16*1024];
static inline void lin(uint8_t *p,size_t n){ for(size_t i=0;i<n;i+=64){ __m512i v=_mm512_load_si512(p+i); v=_mm512_add_epi16(v,_mm512_set1_epi16(1)); _mm512_store_si512(p+i,v);} }
static inline void addf16(uint8_t *p,size_t n,const float*t){ for(size_t i=0;i<n;i+=64,t+=32){
    __m512 a=_mm512_cvtph_ps(_mm256_load_si256((void*)(p+i))); __m512 b=_mm512_cvtph_ps(_mm256_load_si256((void*)(p+i+32)));
    a=_mm512_add_ps(a,_mm512_load_ps(t)); b=_mm512_add_ps(b,_mm512_load_ps(t+16));
    _mm256_store_si256((void*)(p+i),_mm512_cvtps_ph(a,4)); _mm256_store_si256((void*)(p+i+32),_mm512_cvtps_ph(b,4));}}
static inline void pfw(const char*q,size_t n){ for(size_t i=0;i<n;i+=64) _mm_prefetch(q+i,_MM_HINT_ET0);}
static void *run(void *a_){ int t=(int)(intptr_t)a_; size_t pitch=S*ROWB;
 for(int rep=0;rep<REPS;rep++){
  if(V.mode==0){ size_t total=B*S*ROWB, blk=65536; for(size_t o=t*blk;o<total;o+=2*blk) lin(x+o,blk); continue;}
  size_t rb=16, C=V.chunk, nch=ROWB/C; size_t item=0;
  if(V.mode==1){ /* chunk-major: item=(chunk, 16 rows); for s: for b; prefetch row s+ahead */
    for(size_t s0=0;s0<S;s0+=rb) for(size_t c=0;c<nch;c++,item++){ if((item&1)!=t) continue;
      for(size_t s=s0;s<s0+rb;s++) for(size_t b=0;b<B;b++){ uint8_t*p=x+b*pitch+s*ROWB+c*C;
        if(s+V.ahead<S) pfw((char*)p+V.ahead*ROWB,C); addf16(p,C,tile[t]);} } }
  else if(V.mode==5){ size_t total=B*S*ROWB, blk=65536; for(size_t o=t*blk;o<total;o+=2*blk){ for(size_t i=0;i<blk;i+=2048) addf16(x+o+i,2048,tile[t]);} }
  else if(V.mode==4){ /* sequence-major in blocks of V.chunk rows: values of the block (R x 4 KiB) reused per sequence; prefetch V.ahead lines on, linearly */
    size_t R=V.chunk; for(size_t s0=0;s0<S;s0+=R,item++){ if((item&1)!=t) continue; burn(V.work*R);
      for(size_t b=0;b<B;b++){ uint8_t*base=x+b*pitch+s0*ROWB; size_t n=R*ROWB; size_t lim=(S-s0)*ROWB;
        for(size_t o=0;o<n;o+=512){ if(o+V.ahead*64<lim) pfw((char*)base+o+V.ahead*64,512); addf16(base+o,512,vals[t]+((o/2)%(R*1024)));} } } }
  else if(V.mode==3){ /* staggered row-major: sequence b starts its row at chunk b mod nch; prefetch the same chunk V.ahead rows on */
    for(size_t s0=0;s0<S;s0+=rb,item++){ if((item&1)!=t) continue;
      for(size_t s=s0;s<s0+rb;s++){ burn(V.work); for(size_t b=0;b<B;b++) for(size_t c0=0;c0<nch;c0++){ size_t c=(c0+b)%nch; uint8_t*p=x+b*pitch+s*ROWB+c*C;
        if(s+V.ahead<S) pfw((char*)p+V.ahead*ROWB,C); addf16(p,C,tile[t]);} } } }
  else { /* row-major: item = 16 rows, all chunks; steps (s,c); prefetch step+ahead */
    for(size_t s0=0;s0<S;s0+=rb,item++){ if((item&1)!=t) continue;
      for(size_t s=s0;s<s0+rb;s++) for(size_t c=0;c<nch;c++){ burn(V.work/nch); for(size_t b=0;b<B;b++){ uint8_t*p=x+b*pitch+s*ROWB+c*C;
        size_t st=s*nch+c+V.ahead; if(st<S*nch) pfw((char*)(x+b*pitch+st*C),C); addf16(p,C,tile[t]);} } } }
 }
  return 0;}
static double go(var v){ V=v; size_t total=B*S*ROWB*REPS; pthread_t th[2]; double t0=now(); for(int i=0;i<2;i++) pthread_create(&th[i],0,run,(void*)(intptr_t)i); for(int i=0;i<2;i++) pthread_join(th[i],0); return total/(now()-t0)/1e9; }
int cmp(const void*a,const void*b){double d=*(double*)a-*(double*)b;return d<0?-1:d>0;}
int main(int argc,char**argv){ int R=atoi(argv[1]); S=atoi(argv[2]); REPS=S<1024?20:3; size_t total=B*S*ROWB; x=aligned_alloc(4096,total); memset(x,0,total);
  int W=argc>3?atoi(argv[3]):0; var vs[]={{"linear",0,0,0,0},{"rmaj c512 a3",2,512,3,W},{"lin f16add",5,512,0,0},{"rmaj c512 none",2,512,100000,W},{"rmaj c512 a2",2,512,2,W},{"stag c512 r1",3,512,1,W},{"stag c512 r2",3,512,2,W},{"stag c2048 r1",3,2048,1,W},{"smaj R8 a24",4,8,24,W},{"smaj R16 a24",4,16,24,W},{"smaj R16 a64",4,16,64,W}};
  int nv=sizeof vs/sizeof vs[0]; double rat[16][64], g[16][64];
  for(int r=0;r<R;r++){ double base=0; for(int k=0;k<nv;k++){ g[k][r]=go(vs[k]); if(!k)base=g[k][r]; rat[k][r]=g[k][r]/base; } }
  for(int k=0;k<nv;k++){ qsort(g[k],R,sizeof(double),cmp); qsort(rat[k],R,sizeof(double),cmp);
    printf("%-14s median %6.1f GB/s  ratio %.3f\n",vs[k].name,g[k][R/2],rat[k][R/2]);} }
