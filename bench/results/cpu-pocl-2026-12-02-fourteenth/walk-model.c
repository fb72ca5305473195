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
typedef struct{const char*name; int mode; size_t chunk; int ahead;}var;
static var V;
__attribute__((aligned(64))) static float tile[2][1024];
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
  else { /* row-major: item = 16 rows, all chunks; steps (s,c); prefetch step+ahead */
    for(size_t s0=0;s0<S;s0+=rb,item++){ if((item&1)!=t) continue;
      for(size_t s=s0;s<s0+rb;s++) for(size_t c=0;c<nch;c++) for(size_t b=0;b<B;b++){ uint8_t*p=x+b*pitch+s*ROWB+c*C;
        size_t st=s*nch+c+V.ahead; if(st<S*nch) pfw((char*)(x+b*pitch+st*C),C); addf16(p,C,tile[t]);} } }
 }
  return 0;}
static double go(var v){ V=v; size_t total=B*S*ROWB*REPS; pthread_t th[2]; double t0=now(); for(int i=0;i<2;i++) pthread_create(&th[i],0,run,(void*)(intptr_t)i); for(int i=0;i<2;i++) pthread_join(th[i],0); return total/(now()-t0)/1e9; }
int cmp(const void*a,const void*b){double d=*(double*)a-*(double*)b;return d<0?-1:d>0;}
int main(int argc,char**argv){ int R=atoi(argv[1]); S=atoi(argv[2]); REPS=S<1024?20:3; size_t total=B*S*ROWB; x=aligned_alloc(4096,total); memset(x,0,total);
  var vs[]={{"linear",0,0,0},{"cmaj c512 a3",1,512,3},{"cmaj c512 a1",1,512,1},{"rmaj c512 a3",2,512,3},{"rmaj c512 a4",2,512,4},{"rmaj c512 a6",2,512,6},{"rmaj c256 a6",2,256,6},{"rmaj c1024 a2",2,1024,2}};
  int nv=sizeof vs/sizeof vs[0]; double rat[16][64], g[16][64];
  for(int r=0;r<R;r++){ double base=0; for(int k=0;k<nv;k++){ g[k][r]=go(vs[k]); if(!k)base=g[k][r]; rat[k][r]=g[k][r]/base; } }
  for(int k=0;k<nv;k++){ qsort(g[k],R,sizeof(double),cmp); qsort(rat[k],R,sizeof(double),cmp);
    printf("%-14s median %6.1f GB/s  ratio %.3f\n",vs[k].name,g[k][R/2],rat[k][R/2]);} }
