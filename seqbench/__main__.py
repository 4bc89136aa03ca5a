from seqbench.cli.main import main

main()
