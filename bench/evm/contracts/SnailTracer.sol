// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// evm-bench's snailtracer, written again: a path tracer in fixed-point integers (10⁶ is 1),
/// after Kevin Beason's smallpt and Péter Szilágyi's snailtracer. A box of six huge spheres, a
/// mirror sphere, a light and a glass octahedron of eight triangles, all kept in storage and
/// set up by every call; each pixel is `spp` random paths of up to 10 bounces (diffuse,
/// mirror, glass with Fresnel), a 32-bit LCG seeded by the pixel.
contract SnailTracer {
    int256 constant ONE = 1_000_000;

    struct Vec {
        int256 x;
        int256 y;
        int256 z;
    }

    struct Ray {
        Vec o;
        Vec d;
        int256 depth;
        bool inside;
    }

    struct Sphere {
        int256 radius;
        Vec pos;
        Vec glow;
        Vec color;
        bool mirror;
    }

    struct Tri {
        Vec a;
        Vec b;
        Vec c;
        Vec n;
        Vec color;
    }

    int256 width;
    int256 height;
    Ray camera;
    Vec dx;
    Vec dy;
    Sphere[] spheres;
    Tri[] tris;
    uint32 seed;

    /// The mean colour of four pixels around (512 + x, 384 + y) … (600 + x, 600 + y), as RGB.
    function Benchmark(int256 x, int256 y, int256 spp) external returns (bytes3) {
        setup();
        Vec memory c = trace(512 + x, 384 + y, spp);
        c = add(c, trace(325 + x, 540 + y, spp));
        c = add(c, trace(600 + x, 600 + y, spp));
        c = add(c, trace(522 + x, 524 + y, spp));
        c = div(c, 4);
        return bytes3(uint24((uint256(c.x) << 16) | (uint256(c.y) << 8) | uint256(c.z)));
    }

    function setup() internal {
        width = 1024;
        height = 768;
        camera = Ray(v(50, 52, 295), norm(Vec(0, -42612, -ONE)), 0, false);
        dx = Vec((width * 513500) / height, 0, 0);
        dy = div(mul(norm(cross(dx, camera.d)), 513500), ONE);

        Vec memory none = Vec(0, 0, 0);
        int256 wall = 100_000 * ONE;
        spheres.push(Sphere(wall, v(100_001, 40, 81), none, c3(750000, 250000, 250000), false));
        spheres.push(Sphere(wall, v(-99_901, 40, 81), none, c3(250000, 250000, 750000), false));
        spheres.push(Sphere(wall, v(50, 40, 100_000), none, c3(750000, 750000, 750000), false));
        spheres.push(Sphere(wall, v(50, 40, -99_830), none, none, false));
        spheres.push(Sphere(wall, v(50, 100_000, 81), none, c3(750000, 750000, 750000), false));
        spheres.push(Sphere(wall, v(50, -99_918, 81), none, c3(750000, 750000, 750000), false));
        spheres.push(Sphere(16 * ONE, v(27, 16, 47), none, c3(999000, 999000, 999000), true));
        spheres.push(Sphere(600 * ONE, v(50, 681, 81), c3(12 * ONE, 12 * ONE, 12 * ONE), none, false));

        // The octahedron: a top, a bottom and four corners around its middle.
        Vec memory top = Vec(73 * ONE, 49 * ONE, 78 * ONE);
        Vec memory bottom = Vec(73 * ONE, 1 * ONE, 78 * ONE);
        Vec[4] memory ring = [v(56, 25, 78), v(73, 25, 94), v(89, 25, 78), v(73, 25, 62)];
        for (uint256 i = 0; i < 4; i++) {
            Vec memory p = ring[i];
            Vec memory q = ring[(i + 1) % 4];
            addTri(p, q, top);
            addTri(q, p, bottom);
        }
    }

    function addTri(Vec memory a, Vec memory b, Vec memory c) internal {
        Vec memory n = norm(cross(sub(b, a), sub(c, a)));
        tris.push(Tri(a, b, c, n, c3(999000, 999000, 999000)));
    }

    function trace(int256 x, int256 y, int256 spp) internal returns (Vec memory color) {
        seed = uint32(uint256(y * width + x));
        color = Vec(0, 0, 0);
        for (int256 k = 0; k < spp; k++) {
            int256 fx = (ONE * x + (rand() % 500000)) / width - 500000;
            int256 fy = (ONE * y + (rand() % 500000)) / height - 500000;
            Vec memory d = add(div(add(mul(dx, fx), mul(dy, fy)), ONE), camera.d);
            Ray memory r = Ray(add(camera.o, mul(d, 140)), norm(d), 0, false);
            color = add(color, div(radiance(r), spp));
        }
        return div(mul(clamp(color), 255), ONE);
    }

    function radiance(Ray memory r) internal returns (Vec memory) {
        if (r.depth > 10) return Vec(0, 0, 0);
        (int256 dist, bool isTri, uint256 id) = hit(r);
        if (dist == 0) return Vec(0, 0, 0);

        Sphere memory s;
        Tri memory t;
        Vec memory color;
        Vec memory glow;
        if (isTri) {
            t = tris[id];
            color = t.color;
            glow = Vec(0, 0, 0);
        } else {
            s = spheres[id];
            color = s.color;
            glow = s.glow;
        }
        // Past five bounces a path goes on with the probability of its brightest channel.
        int256 p = max(1, max(color.x, max(color.y, color.z)));
        r.depth++;
        if (r.depth > 5) {
            if (rand() % ONE < p) color = div(mul(color, ONE), p);
            else return glow;
        }
        Vec memory light = isTri ? glass(r, t, dist) : surface(r, s, dist);
        return add(glow, div(mul(color, light), ONE));
    }

    function surface(Ray memory r, Sphere memory s, int256 dist) internal returns (Vec memory) {
        Vec memory pt = add(r.o, div(mul(r.d, dist), ONE));
        Vec memory n = norm(sub(pt, s.pos));
        if (s.mirror) return specular(r, pt, n);
        if (dot(n, r.d) >= 0) n = mul(n, -1);
        return diffuse(r, pt, n);
    }

    function diffuse(Ray memory r, Vec memory pt, Vec memory n) internal returns (Vec memory) {
        int256 angle = (6283184 * (rand() % ONE)) / ONE;
        int256 r2 = rand() % ONE;
        int256 r2s = sqrt(r2) * 1000;
        Vec memory u = norm(cross(abs(n.x) > 100000 ? Vec(0, ONE, 0) : Vec(ONE, 0, 0), n));
        Vec memory w = norm(cross(n, u));
        Vec memory d = add(mul(u, (cos(angle) * r2s) / ONE), mul(w, (sin(angle) * r2s) / ONE));
        d = norm(add(d, mul(n, sqrt(ONE - r2) * 1000)));
        return radiance(Ray(pt, d, r.depth, r.inside));
    }

    function specular(Ray memory r, Vec memory pt, Vec memory n) internal returns (Vec memory) {
        Vec memory d = norm(sub(r.d, mul(n, (2 * dot(n, r.d)) / ONE)));
        return radiance(Ray(pt, d, r.depth, r.inside));
    }

    function glass(Ray memory r, Tri memory t, int256 dist) internal returns (Vec memory) {
        Vec memory pt = add(r.o, div(mul(r.d, dist), ONE));
        int256 nnt = r.inside ? int256(1500000) : int256(666666);
        int256 ddn = dot(t.n, r.d) / ONE;
        if (ddn >= 0) ddn = -ddn;
        int256 cos2t = 1e12 - (nnt * nnt * (1e12 - ddn * ddn)) / 1e12;
        if (cos2t < 0) return specular(r, pt, t.n);
        return refract(r, pt, t.n, nnt, ddn, cos2t);
    }

    function refract(
        Ray memory r,
        Vec memory pt,
        Vec memory n,
        int256 nnt,
        int256 ddn,
        int256 cos2t
    ) internal returns (Vec memory) {
        int256 sign = r.inside ? int256(1) : -1;
        Vec memory d = sub(mul(r.d, nnt), mul(n, sign * ((ddn * nnt) / ONE + sqrt(cos2t))));
        d = norm(div(d, ONE));
        int256 c = r.inside ? ONE + ddn : ONE - dot(d, n) / ONE;
        // Schlick's approximation of the reflected share, R0 = 0.04.
        int256 re = 40000 + ((ONE - 40000) * c * c * c * c * c) / 1e30;
        if (r.depth <= 2) {
            Vec memory both = mul(radiance(Ray(pt, d, r.depth, !r.inside)), ONE - re);
            both = add(both, mul(specular(r, pt, n), re));
            return div(both, ONE);
        }
        if (rand() % ONE < 250000 + re / 2) {
            return div(mul(specular(r, pt, n), re), 250000 + re / 2);
        }
        return div(mul(radiance(Ray(pt, d, r.depth, !r.inside)), ONE - re), 750000 - re / 2);
    }

    /// The nearest sphere or triangle the ray meets: its distance (0 for none), kind and index.
    function hit(Ray memory r) internal view returns (int256 dist, bool isTri, uint256 id) {
        uint256 n = spheres.length;
        for (uint256 i = 0; i < n; i++) {
            int256 d = hitSphere(spheres[i], r);
            if (d > 0 && (dist == 0 || d < dist)) {
                dist = d;
                id = i;
            }
        }
        n = tris.length;
        for (uint256 i = 0; i < n; i++) {
            int256 d = hitTri(tris[i], r);
            if (d > 0 && (dist == 0 || d < dist)) {
                dist = d;
                id = i;
                isTri = true;
            }
        }
    }

    function hitSphere(Sphere storage s, Ray memory r) internal view returns (int256) {
        Vec memory op = sub(s.pos, r.o);
        int256 b = dot(op, r.d) / ONE;
        int256 radius = s.radius;
        int256 det = b * b - dot(op, op) + radius * radius;
        if (det < 0) return 0;
        det = sqrt(det);
        if (b - det > 1000) return b - det;
        if (b + det > 1000) return b + det;
        return 0;
    }

    /// Möller–Trumbore.
    function hitTri(Tri storage t, Ray memory r) internal view returns (int256) {
        Vec memory a = t.a;
        Vec memory e1 = sub(t.b, a);
        Vec memory e2 = sub(t.c, a);
        Vec memory p = cross(r.d, e2);
        int256 det = dot(e1, p) / ONE;
        if (det > -1000 && det < 1000) return 0;
        Vec memory s = sub(r.o, a);
        int256 u = dot(s, p) / det;
        if (u < 0 || u > ONE) return 0;
        Vec memory q = cross(s, e1);
        int256 w = dot(r.d, q) / det;
        if (w < 0 || u + w > ONE) return 0;
        int256 dist = dot(e2, q) / det;
        return dist < 1000 ? int256(0) : dist;
    }

    // Numbers

    function rand() internal returns (int256) {
        unchecked {
            seed = 1103515245 * seed + 12345;
        }
        return int256(uint256(seed));
    }

    function sqrt(int256 x) internal pure returns (int256 y) {
        int256 z = (x + 1) / 2;
        y = x;
        while (z < y) {
            y = z;
            z = (x / z + z) / 2;
        }
    }

    /// Taylor series around 0, after bringing x into [0, 2π).
    function sin(int256 x) internal pure returns (int256 y) {
        x %= 6283184;
        if (x < 0) x += 6283184;
        int256 term = x;
        int256 sign = 1;
        int256 f = 1;
        int256 k = 2;
        while (term > f) {
            y += (sign * term) / f;
            term = (term * x * x) / ONE / ONE;
            f *= k * (k + 1);
            sign = -sign;
            k += 2;
        }
    }

    function cos(int256 x) internal pure returns (int256) {
        int256 s = sin(x);
        return sqrt(1e12 - s * s);
    }

    function abs(int256 x) internal pure returns (int256) {
        return x < 0 ? -x : x;
    }

    function max(int256 a, int256 b) internal pure returns (int256) {
        return a > b ? a : b;
    }

    function clamp(int256 x) internal pure returns (int256) {
        return x < 0 ? int256(0) : x > ONE ? ONE : x;
    }

    // Vectors

    function v(int256 x, int256 y, int256 z) internal pure returns (Vec memory) {
        return Vec(x * ONE, y * ONE, z * ONE);
    }

    function c3(int256 x, int256 y, int256 z) internal pure returns (Vec memory) {
        return Vec(x, y, z);
    }

    function add(Vec memory a, Vec memory b) internal pure returns (Vec memory) {
        return Vec(a.x + b.x, a.y + b.y, a.z + b.z);
    }

    function sub(Vec memory a, Vec memory b) internal pure returns (Vec memory) {
        return Vec(a.x - b.x, a.y - b.y, a.z - b.z);
    }

    function mul(Vec memory a, int256 m) internal pure returns (Vec memory) {
        return Vec(a.x * m, a.y * m, a.z * m);
    }

    function mul(Vec memory a, Vec memory b) internal pure returns (Vec memory) {
        return Vec(a.x * b.x, a.y * b.y, a.z * b.z);
    }

    function div(Vec memory a, int256 d) internal pure returns (Vec memory) {
        return Vec(a.x / d, a.y / d, a.z / d);
    }

    function dot(Vec memory a, Vec memory b) internal pure returns (int256) {
        return a.x * b.x + a.y * b.y + a.z * b.z;
    }

    function cross(Vec memory a, Vec memory b) internal pure returns (Vec memory) {
        return Vec(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
    }

    function norm(Vec memory a) internal pure returns (Vec memory) {
        int256 length = sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
        return Vec((a.x * ONE) / length, (a.y * ONE) / length, (a.z * ONE) / length);
    }

    function clamp(Vec memory a) internal pure returns (Vec memory) {
        return Vec(clamp(a.x), clamp(a.y), clamp(a.z));
    }
}
