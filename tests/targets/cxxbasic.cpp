// cxxbasic: std::sort, std::map and iostream, for tracing libstdc++-6.dll.
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

int main()
{
    std::vector<int> v;
    for (int i = 0; i < 2000; i++)
        v.push_back((i * 7919) % 2003);
    std::sort(v.begin(), v.end());
    std::map<std::string, int> counts;
    const char *words[] = { "alpha", "beta", "gamma", "beta", "alpha", "alpha" };
    for (int r = 0; r < 100; r++)
        for (const char *w : words)
            counts[w]++;
    for (const auto &kv : counts)
        std::cout << kv.first << " " << kv.second << "\n";
    std::cout << "min " << v.front() << " max " << v.back() << " size " << v.size() << std::endl;
    return 0;
}
